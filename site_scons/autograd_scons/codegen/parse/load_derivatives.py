"""derivatives.yaml -> DifferentiabilityInfo, one per entry and dispatch key.

Each entry is matched to its native function by schema string, then to the
canonical member of that function's variant group (functional/in-place/
out=); its formulas are rewritten so that derived properties of inputs and
outputs (`self.sym_sizes()`, `other.scalar_type()`, ...) are saved at forward
time instead of whole tensors.  View entries also give their `{view}_copy`
twins the same formulas.  Every problem is a SpecError naming file, line and
entry.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ..model.autograd import (IDENT, Derivative, DifferentiabilityInfo, ForwardDerivative,
                           unique_by_name, uses_ident)
from ..model.cpp import Binding, cpp_arguments, return_names, return_type
from autograd_scons.base.errors import FormulaError, SpecError
from .formula_names import check_formula_text, known_names
from .grad_usage import check_grad_usage as _check_grad_usage, grad_indices as _grad_indices, reserved_argument
from .matching import Matcher, view_copy_infos
from .saved_attributes import saved_attributes
from ..model.schema import INPLACE, FunctionSchema, Type
from .native_functions import NativeFunction, NativeSpec, load_tags, parse_native_functions
from .yaml_io import Entry, gc_paused, load_entries, read_text

AUTOGRAD_KEYS = frozenset(
    ["AutogradNestedTensor"] + ["Autograd" + b for b in (
        "CPU", "CUDA", "HIP", "XLA", "MTIA", "MPS", "IPU", "XPU", "HPU", "VE", "Lazy", "Meta",
        "PrivateUse1", "PrivateUse2", "PrivateUse3")])

_NAME_RE = re.compile(r"(\w+)(\.\w+)?\((.*)\)")
_RESULT_N_RE = re.compile(r"^result(\d+)$")


@dataclass
class Specs:
    """The loaded inputs, with the parsed native functions."""
    native: NativeSpec
    derivatives_path: str
    entries: list[Entry]


def load_specs(native_functions: str, derivatives: str, tags: Optional[str] = None,
               native_cache=None) -> Specs:
    """`native_cache`: a native_cache.NativeCache keeping the parsed native
    functions between runs; None: parse them."""
    with gc_paused():
        valid_tags = load_tags(tags)
        text = read_text(native_functions)
        native = (native_cache.parse(native_functions, text, valid_tags) if native_cache is not None
                  else parse_native_functions(native_functions, text, valid_tags))
        entries = load_entries(derivatives, read_text(derivatives))
    # Ops declared to decompose (`dispatch: {CompositeImplicitAutograd: k}`)
    # never need an entry: specs of only those may have an empty file.
    declared = sum(not f.generated and not _declared_composite(f) for f in native.functions)
    if not entries and declared:
        # Most likely a truncated or emptied file: taken at its word, it
        # would delete every generated Function without a word.
        raise SpecError(f"no derivatives entries (the file is empty or only comments) while "
                        f"{native_functions} declares {declared} native functions; "
                        "refusing to remove every generated Function", derivatives, 1)
    return Specs(native, derivatives, entries)


def _declared_composite(f: NativeFunction) -> bool:
    dispatch = f.raw.get("dispatch")
    return isinstance(dispatch, dict) and f.dispatch_keys == {"CompositeImplicitAutograd"}


def load_infos(native_functions: str, derivatives: str,
               tags: Optional[str] = None) -> list[DifferentiabilityInfo]:
    specs = load_specs(native_functions, derivatives, tags)
    with gc_paused():
        return infos_from_specs(specs)


def infos_from_specs(specs: Specs) -> list[DifferentiabilityInfo]:
    """All infos, in derivatives.yaml order, then the derived {view}_copy ones."""
    matcher = Matcher(specs.native)
    counter: Counter[str] = Counter()
    by_func: dict[str, list[DifferentiabilityInfo]] = {}
    where: dict[str, Entry] = {}
    for e in specs.entries:
        infos = _EntryLoader(specs.derivatives_path, e, matcher, counter).load()
        key = str(infos[0].func.func)
        if key in by_func:
            prev = where[key]
            raise SpecError(f"duplicate entry: line {prev.line} already defines derivatives for "
                            f"'{key}'", specs.derivatives_path, e.line, e.data.get("name"))
        by_func[key] = infos
        where[key] = e
    out = [i for infos in by_func.values() for i in infos]
    out += view_copy_infos(by_func, specs.native)
    return out


# ---------------------------------------------------------- per entry


class _EntryLoader:
    def __init__(self, path: str, entry: Entry, matcher: Matcher, counter: Counter):
        self.path, self.entry, self.matcher, self.counter = path, entry, matcher, counter
        self.spec: Optional[str] = entry.data.get("name") if isinstance(entry.data.get("name"), str) else None

    def error(self, msg: str, *keys: str) -> SpecError:
        return SpecError(msg, self.path, self.entry.line_of(*keys), self.spec)

    def load(self) -> list[DifferentiabilityInfo]:
        d = dict(self.entry.data)
        if "name" not in d:
            raise self.error("entry has no 'name:' (the schema it differentiates)")
        spec = d.pop("name")
        if not isinstance(spec, str):
            raise self.error("'name:' must be a schema string", "name")
        m = _NAME_RE.match(spec)
        if m is None:
            raise self.error("'name:' is not a schema of the form 'name.overload(args) -> returns'", "name")
        base_name = m.group(1)
        od_raw = d.pop("output_differentiability", None)
        if "dispatch" in d:
            per_key = d.pop("dispatch")
            if d:
                raise self.error(f"an entry with 'dispatch:' takes its formulas under the dispatch "
                                 f"keys, not '{next(iter(d))}'", next(iter(d)))
            if not isinstance(per_key, dict) or not per_key:
                raise self.error("'dispatch:' must map dispatch keys to formulas", "dispatch")
            path_of: Callable[[Any], tuple] = lambda k: ("dispatch", k)  # noqa: E731
        else:
            per_key = {"Default": d}
            path_of = lambda k: ()  # noqa: E731

        try:
            func = self.matcher.canonical(spec, base_name)
        except FormulaError as ex:
            raise self.error(str(ex), "name") from None
        od, conditions = self.output_differentiability(od_raw, func)

        infos = []
        for key, defn in per_key.items():
            if key != "Default" and key not in AUTOGRAD_KEYS:
                raise self.error(f"unknown dispatch key '{key}' (use Default or one of "
                                 f"{', '.join(sorted(AUTOGRAD_KEYS))})", "dispatch", str(key))
            if not isinstance(defn, dict):
                raise self.error(f"dispatch key '{key}' must map to formulas", "dispatch", str(key))
            infos.append(self.info(func, base_name, key, defn, od, conditions, path_of(key)))
        return infos

    def bindings(self, f: NativeFunction) -> list[Binding]:
        try:
            return cpp_arguments(f.func, const_ref_for_mutable=f.use_const_ref_for_mutable_tensors,
                                 ilistref=f.part_of_structured_group)
        except FormulaError as ex:
            raise self.error(str(ex), "name") from None

    def output_differentiability(self, raw: Any, func: NativeFunction):
        if raw is None:
            return None, None
        n = len(func.func.returns)
        if not isinstance(raw, list) or not raw:
            raise self.error("'output_differentiability' must be a list", "output_differentiability")
        if any(isinstance(x, str) for x in raw):
            if len(raw) != 1 or n != 1:
                raise self.error("a condition in 'output_differentiability' is supported only for "
                                 "a single-output function, as a one-item list", "output_differentiability")
            return (True,), (raw[0],)
        if not all(isinstance(x, bool) for x in raw):
            raise self.error("'output_differentiability' items must be True or False",
                             "output_differentiability")
        if len(raw) != n:
            raise self.error(f"'output_differentiability' has {len(raw)} items but the function has "
                             f"{n} outputs", "output_differentiability")
        return tuple(raw), None

    # -- one dispatch key ------------------------------------------------

    def info(self, f: NativeFunction, base_name: str, key: str, defn: dict,
             od: Optional[tuple[bool, ...]], conditions, where: tuple) -> DifferentiabilityInfo:
        fs = f.func
        bindings = self.bindings(f)
        arg_names = [b.name for b in bindings]
        flags = od or (True,) * len(fs.returns)
        available = tuple(f"grad_{r.name}" for r, ok in zip(fs.returns, flags)
                          if ok and r.name is not None and r.type.base() == "Tensor")
        derivatives, forwards, non_diff = self.formulas(f, bindings, defn, available, where)
        if not fs.returns and (derivatives or forwards):
            raise self.error(f"the op returns nothing ('{fs.name}(...) -> ()'): autograd has no output to attach "
                             "its formulas to; return the result, or mark the inputs 'non_differentiable'", "name")
        reserved = reserved_argument(arg_names, [d.original_formula for d in derivatives], available)
        if reserved:
            raise self.error(f"{reserved} (schema at {f.file}:{f.line})", "name")
        diff_names = {n for d in derivatives for n in d.var_names}
        args_with_derivatives = tuple(b for b in bindings if b.name in diff_names)
        try:
            fw = tuple(dataclasses.replace(self.forward(f, base_name, arg_names, derivatives,
                                                        args_with_derivatives, formula, names),
                                           line=self.entry.line_of(*where, k))
                       for formula, names, k in forwards)
            _check_grad_usage(derivatives)
        except FormulaError as ex:
            raise self.error(str(ex), *where) from None

        op = None
        if args_with_derivatives:
            prefix = op_prefix(base_name) + ("" if key == "Default" else key)
            op = f"{prefix}{self.counter[prefix]}"
            self.counter[prefix] += 1
        return DifferentiabilityInfo(
            name=base_name, func=f, dispatch_key=key, op=op,
            derivatives=tuple(derivatives), forward_derivatives=fw,
            all_saved_inputs=unique_by_name(s for d in derivatives for s in d.saved_inputs),
            all_saved_outputs=unique_by_name(s for d in derivatives for s in d.saved_outputs),
            available_named_gradients=available,
            used_named_gradients=frozenset(n for d in derivatives for n in d.named_gradients),
            args_with_derivatives=args_with_derivatives,
            non_differentiable_arg_names=tuple(non_diff),
            output_differentiability=od, output_differentiability_conditions=conditions,
            file=self.path, line=self.entry.line, entry=self.entry.data)

    def formulas(self, f: NativeFunction, bindings: list[Binding], defn: dict, available: tuple,
                 where: tuple) -> tuple[list[Derivative], list[tuple[str, tuple[str, ...], str]], list[str]]:
        """The entry's formula keys, checked: (backward derivatives, forward
        formulas as (formula, output names, key), non-differentiable args)."""
        fs = f.func
        arg_names = [b.name for b in bindings]
        ret_names = [r.name for r in fs.returns]
        outputs = self.output_names(f)
        known = known_names([a.name for a in fs.schema_order_arguments()], [r.name for r in fs.returns if r.name],
                            foreach=fs.name.base.startswith("_foreach_"))
        derivatives: list[Derivative] = []
        forwards: list[tuple[str, tuple[str, ...], str]] = []
        non_diff: list[str] = []
        defined: dict[str, str] = {}
        fw_defined: dict[str, str] = {}
        for raw_key in sorted(defn, key=str):
            k = str(raw_key)
            if not isinstance(raw_key, str):
                raise self.error(f"formula key {raw_key!r} must name arguments or outputs", *where)
            formula = defn[raw_key]
            if not isinstance(formula, str):
                raise self.error(f"the formula for '{k}' must be a string", *where, k)
            names = tuple(x.strip() for x in k.split(","))
            if formula.lower().strip() not in ("non_differentiable", "auto_element_wise", "auto_linear"):
                try:   # (before the compiler, which would see it only in the generated code)
                    check_formula_text(formula, known, forward=names[0] not in arg_names)
                except FormulaError as ex:
                    raise self.error(f"formula for '{k}': {ex}", *where, k) from None
            for name in names:
                if name in arg_names and name in ret_names:
                    raise self.error(f"'{name}' is both an argument and a named output", *where, k)
            if names[0] not in arg_names:   # a forward-mode formula
                self.claim(fs, names, outputs, fw_defined, k, where, forward=True)
                forwards.append((formula, names, k))
                continue
            self.claim(fs, names, arg_names, defined, k, where, forward=False)
            if formula.lower().strip() == "non_differentiable":
                non_diff.extend(names)
                continue
            self.gradient_capable(fs, names, k, where)
            try:
                derivatives.append(dataclasses.replace(self.derivative(f, bindings, formula, names, available),
                                                       line=self.entry.line_of(*where, k)))
            except FormulaError as ex:
                raise self.error(f"formula for '{k}': {ex}", *where, k) from None
        return derivatives, forwards, non_diff

    def claim(self, fs: FunctionSchema, names: tuple[str, ...], valid, defined: dict, k: str,
              where: tuple, forward: bool) -> None:
        """Each name of key `k` must be valid and not defined by another key."""
        for name in names:
            if name not in valid:
                if forward:
                    raise self.error(f"formula key '{k}': '{name}' is neither an argument nor an "
                                     f"output of '{fs}'", *where, k)
                raise self.error(f"formula key '{k}': '{name}' is not an argument of '{fs}'", *where, k)
            if name in defined:
                kind = "forward formulas for output" if forward else "formulas for argument"
                raise self.error(f"two {kind} '{name}' ('{defined[name]}' and '{k}')", *where, k)
            defined[name] = k

    def gradient_capable(self, fs: FunctionSchema, names: tuple[str, ...], k: str, where: tuple) -> None:
        """Only tensor arguments (Tensor, Tensor?, Tensor[]) have a gradient:
        a formula for a float, int, bool, Scalar... would fail in the C++
        compiler, inside torch's headers."""
        types = {a.name: a.type for a in fs.arguments.flat_all}
        for name in names:
            t = types.get(name)
            if t is not None and t.base() != "Tensor":
                raise self.error(f"formula key '{k}': argument '{name}' is a '{t}', which cannot have a "
                                 f"gradient: only Tensor arguments can (remove the formula, or mark it "
                                 f"'non_differentiable')", *where, k)

    @staticmethod
    def output_names(f: NativeFunction) -> set[str]:
        """Names a forward formula may define: named returns, `result`, `resultN`."""
        rets = f.func.returns
        names = {r.name for r in rets if r.name}
        if len(rets) == 1:
            names.add("result")
        names.update(f"result{i}" for i in range(len(rets)))
        return names

    def derivative(self, f: NativeFunction, bindings: Sequence[Binding], formula: str,
                   var_names: tuple[str, ...], available: Sequence[str]) -> Derivative:
        fs = f.func
        cref = f.use_const_ref_for_mutable_tensors
        inputs = [(b.saved_name, b.ctype.remove_const_ref()) for b in bindings]
        outputs = [("result" if n == "self" else n, return_type(r, const_ref_for_mutable=cref).remove_const_ref())
                   for n, r in zip(return_names(fs), fs.returns)]
        new, saved_in = saved_attributes(formula, inputs, var_names)
        new, saved_out = saved_attributes(new, outputs, var_names)
        for i in _grad_indices(new):
            if i >= len(fs.returns):
                raise FormulaError(f"uses grads[{i}] but the function has only {len(fs.returns)} outputs")
        return Derivative(new, formula, var_names, saved_in, saved_out,
                          frozenset(n for n in available if uses_ident(new, n)))

    def forward(self, f: NativeFunction, base_name: str, arg_names: list[str],
                derivatives: list[Derivative], diff_args: tuple[Binding, ...],
                formula: str, names: tuple[str, ...]) -> ForwardDerivative:
        fs = f.func
        types = _output_types(fs, names)
        is_foreach = fs.name.base.startswith("_foreach_")

        def required(text: str, postfix: str) -> tuple[str, ...]:
            found = []
            for b in diff_args:
                if b.ctype.is_tensor_list and not b.ctype.is_optional_tensor_list and not is_foreach:
                    continue  # list inputs are handled inside the formula's callee
                if uses_ident(text, b.name):
                    raise FormulaError(f"forward formula for {', '.join(names)} uses '{b.name}', which is "
                                     f"ambiguous: use {b.name}_p for the primal, {b.name}_t for the tangent")
                if uses_ident(text, b.name + postfix):
                    found.append(b.name)
            return tuple(found)

        tangents = required(formula, "_t")
        if formula == "auto_element_wise":
            if fs.kind() == INPLACE:
                raise FormulaError("auto_element_wise cannot be used on an in-place function")
            if len(diff_args) != 1 or len(names) > 1:
                raise FormulaError("auto_element_wise needs exactly one differentiable input and one output")
            if len(derivatives) != 1:
                raise FormulaError("auto_element_wise needs the backward formula of its input")
            arg = diff_args[0].name
            text = re.sub(IDENT.format("grad"), lambda m: f"{m.group(1)}{arg}_t.conj(){m.group(2)}",
                          derivatives[0].original_formula)
            for b in diff_args:
                text = re.sub(IDENT.format(b.name), rf"\g<1>{b.name}_p\g<2>", text)  # (a name: no backslash)
            formula, tangents = f"({text}).conj()", tuple(arg_names)
        elif formula == "auto_linear":
            if len(names) > 1:
                raise FormulaError("auto_linear needs a single output")
            if not diff_args:
                raise FormulaError("auto_linear needs a differentiable input")
            diff = {b.name for b in diff_args}
            args = [n + "_t" if n in diff else n for n in arg_names]
            callee = base_name + ("_symint" if fs.has_symint() else "")
            if "function" in f.variants:
                formula = f"at::{callee}({', '.join(args)})"
            elif "method" in f.variants:
                formula = f"{args[0]}.{callee}({', '.join(args[1:])})"
            else:
                raise FormulaError("auto_linear needs a function or method variant")
            tangents = tuple(b.name for b in diff_args)
        return ForwardDerivative(formula, names, types, tangents, required(formula, "_p"))


def op_prefix(name: str) -> str:
    """`mul` -> `MulBackward`; `nll_loss_forward` -> `NllLossBackward`."""
    return ("".join(p.title() for p in name.split("_")) + "Backward").replace("ForwardBackward", "Backward")


def _output_types(fs: FunctionSchema, names: tuple[str, ...]) -> tuple[Type, ...]:
    named = [r.type for r in fs.returns if r.name in names]
    if named:
        return tuple(named)
    if names == ("result",):
        return (fs.returns[0].type,)
    return tuple(fs.returns[int(m.group(1))].type for n in names if (m := _RESULT_N_RE.match(n)))
