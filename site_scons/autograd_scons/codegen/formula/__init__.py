"""The formula translator: derivatives.yaml's formulas (C++ expressions) as
Python expressions, for the stable target's generated Python autograd.

API (pure Python, no torch):

    from autograd_scons.codegen.formula import translate, FormulaError, callees, names

    callee_table = callees(native_functions)   # parsed NativeFunction list, once
    py = translate(formula, inputs={"self": "Tensor", "dim": "int[]", ...},
                   outputs={"result": "Tensor"}, helpers=HELPERS,
                   functions=callee_table, helper_prefix="H.")

- `inputs`/`outputs`: the names the formula reads, each with its type in
  names.py's vocabulary ("Tensor", "Tensor?", "int", "int[]", "float",
  "Scalar", "ScalarType", "TensorOptions", "TypeAndSize", ...):
  `names.schema_type(str(arg.type))` for a schema argument,
  `names.cpp_type(saved.type.cpp_type())` for a parser's SavedAttribute.
  The gradient names come with them: `grad`, `grads` (`grads[i]`),
  `grad_<output>`, `<input>_t`/`<input>_p` of each tensor input and output,
  `grad_input_mask`, `retain_variables`.
  Pass every return as an output (a forward formula may read `result1`,
  the indices, though only `result0` is differentiable); an in-place op's
  `original_self_t`/`_p` come with a tensor `self`.
- `helpers`: the names the helper module defines (a collection; or a mapping
  name -> type of what it returns, "Tensor" if not a mapping); a call of one
  is printed `helper_prefix + name(...)`.  The helpers of this package
  (torch_helpers/, FunctionsManual's written in Python): helper_names.
  helper_types() without importing torch (helper_package() gives their
  files' sources too, to copy beside a generated module); the imported
  package's HELPERS says the same.
- `own_helpers`: the extension's own helper module (user_helpers.py's
  read_helper_module(path) of the file `python_helpers=` names: its
  top-level defs, read with ast, never imported), `own_prefix` how the
  generated code reaches it; `ns::f(...)` (ns not at/std/c10/torch) and
  `f(...)` call its f, `ns::g(...)` it lacks is refused naming g and it.
- `functions`: callees(...) of torch's native functions (ATen's, from the
  native_functions.yaml torchgen ships: an extension's formulas call them), so that ATen calls
  get their Python home and keyword-only arguments (without it every ATen
  call is refused).
- The result reads `torch` and `math`: the generated module imports both.
  A backward formula may return a gradient of the broadcast shape or
  another dtype than its input's: autograd's engine sums and casts it,
  for a Python Function as for libtorch's (the proof applies the same).
  A multi-variable formula (`self, other: ...`) gives a tuple, one per
  variable; `grad_input_mask[i]` is whether variable i needs its gradient.
- Anything it cannot translate raises FormulaError naming the construct and
  its column ("cannot translate the member access '->sym_sizes' (column
  12 of '...')"): the caller re-raises it located at the yaml line.
  translate_typed() returns (text, type) instead.

The table (docs/formula-translation.md has it in full): `at::f`/`f` ->
`torch.f` (or `torch._C._nn.f`..., or a method where ATen has only that),
`_symint` dropped; `.sym_sizes()`/`.sizes()` -> `.shape`, `.sym_size(d)` ->
`.size(d)`, `.sym_numel()` -> `.numel()`, `.scalar_type()` -> `.dtype`,
`.options()` -> a dict spread into the call (`**`); `.defined()`/
`.has_value()` -> `is not None`, `Tensor()`/`std::nullopt` -> None,
`c ? a : b` -> `a if c else b`, `{a, b}` -> a list, `/` -> `//` where both
sides are integers, `/` where one is a Tensor or float, refused otherwise.
Refused: `->`, lambdas, pointers, templates other than std::get/tuple/
vector/optional, names it does not know, a loop variable (foreach's `i`).

On the parser's records, derivatives.py does the typing and the locating:
`translate_derivative(info, derivative, helpers=, functions=)` gives the
backward formula's Python and its saved values' expressions (`self_sym_sizes`
-> `self.shape`), `translate_forward(info, forward_derivative, ...)` a
forward formula's; a refusal is a SpecError at the formula's yaml line.

Modules: syntax.py (tokens, tree, parser), translate.py (the printer),
calls.py and methods.py (calls), names.py (tables and types), callees.py
(the ATen table from native functions), user_helpers.py (an extension's
own helper module, read statically), torch_helpers/ (the helpers, the
one package here that imports torch: generated code copies or imports it).
"""

from autograd_scons.base.errors import FormulaError
from .callees import callees
from .syntax import parse
from .translate import gradient_variables, translate, translate_typed
from . import names

__all__ = ["FormulaError", "callees", "parse", "translate", "translate_typed", "gradient_variables", "names"]
