"""The formula translator on each construct, and its refusals (fast tier:
no torch, a small hand-made table of ATen functions)."""

from __future__ import annotations

import pytest

from autograd_scons.base.errors import FormulaError
from autograd_scons.codegen.formula import names, parse, translate
from autograd_scons.codegen.formula.names import Callee, Overload
from autograd_scons.codegen.formula.syntax import Binary, Call, Conditional, Member, Name

T = "Tensor"
FUNCTIONS = {
    "sum": Callee("sum", "torch.sum", True, (
        Overload(("self",), ("dtype",), T, (T, "ScalarType?")),
        Overload(("self", "dim", "keepdim"), ("dtype",), T, (T, "int[]?", "bool", "ScalarType?")))),
    "where": Callee("where", "torch.where", False, (Overload(("condition", "self", "other"), (), T, (T, T, T)),
                                                   Overload(("condition",), (), "Tensor[]", (T,)))),
    "zeros": Callee("zeros", "torch.zeros", False, (Overload(("size",), ("dtype", "layout", "device", "pin_memory"),
                                                             T, ("int[]", "ScalarType?", "Layout?", "Device?", "bool?")),)),
    "expand": Callee("expand", "torch.ops.aten.expand", True, (Overload(("self", "size"), ("implicit",), T,
                                                                       (T, "int[]", "bool")),)),
    "slice_backward": Callee("slice_backward", "torch.ops.aten.slice_backward", False, (
        Overload(("grad_output", "input_sizes", "dim", "start", "end", "step"), (), T, (T, "int[]", "int", "int", "int", "int")),)),
    "to": Callee("to", None, True, (
        Overload(("self", "dtype", "non_blocking", "copy"), ("memory_format",), T, (T, "ScalarType", "bool", "bool", "MemoryFormat?")),
        Overload(("self",), ("dtype", "layout", "device"), T, (T, "ScalarType?", "Layout?", "Device?")))),
}
INPUTS = {"self": T, "other": T, "dim": "int[]", "keepdim": "bool", "self_sym_sizes": "int[]", "alpha": "Scalar",
          "n": "int", "k": "int", "p": "float", "self_scalar_type": "ScalarType", "weight": "Tensor?",
          "self_options": "TensorOptions", "bias_sym_sizes_opt": "int[]?", "bias": "Tensor?"}


def tr(formula: str, **kw) -> str:
    return translate(formula, inputs=INPUTS, outputs={"result": T, "result1": T},
                     helpers=kw.pop("helpers", ("handle_r_to_c", "sum_to")), functions=FUNCTIONS,
                     helper_prefix="H.", **kw)


# --- the parser ----------------------------------------------------------------


def test_precedence_and_associativity_are_cpp_s():
    assert parse("a - b - c") == Binary(6, "-", Binary(2, "-", Name(0, ("a",)), Name(4, ("b",))), Name(8, ("c",)))
    tree = parse("a == b & c")   # C++: (a == b) & c (Python's & binds tighter than ==)
    assert isinstance(tree, Binary) and tree.op == "&"
    assert isinstance(parse("a ? b : c ? d : e").orelse, Conditional)
    call = parse("grad.sum(0)")
    assert isinstance(call, Call) and isinstance(call.fn, Member) and call.fn.name == "sum"


@pytest.mark.parametrize("formula, message", [
    ("grad * (self", "'(' opened at column 8 is not closed by ')'"),
    ("grad * self)", "unbalanced ')' at column 12"),
    ("at::sum(grad, {0, 1)", "'{' opened at column 15 is not closed by '}'"),
    ("grads[0", "'[' opened at column 6 is not closed by ']'"),
    ("fmap(x, [](int i){return -i;})", "a lambda"),
    ("x = 1", "assignment"),
    ("grad $ 2", "unexpected character '$' at column 6"),
])
def test_parse_errors_name_the_construct_and_column(formula, message):
    with pytest.raises(FormulaError, match=None) as e:
        parse(formula)
    assert message in str(e.value)


def test_comments_and_templates_parse():
    assert tr("at::sum(grad, /*dim=*/dim, keepdim) // the gradient summed") == "torch.sum(grad, dim, keepdim)"
    n = parse("std::vector<c10::SymInt>(n, 1)").fn
    assert isinstance(n, Name) and n.template == ("c10::SymInt",)


# --- the printer --------------------------------------------------------------


@pytest.mark.parametrize("formula, python", [
    ("grad * self.sum(dim, true)", "grad * self.sum(dim, True)"),
    ("at::sum(grad, dim, keepdim)", "torch.sum(grad, dim, keepdim)"),
    ("sum(grad, dim, true, self_scalar_type)", "torch.sum(grad, dim, True, dtype=self_scalar_type)"),
    ("grad.expand_symint(self_sym_sizes)", "grad.expand(self_sym_sizes)"),
    ("grad.to(self_scalar_type)", "grad.to(self_scalar_type)"),
    ("self.sym_sizes()", "self.shape"),
    ("self.sizes()", "self.shape"),
    ("self.sym_size(-1)", "self.size(-1)"),
    ("self.sym_numel()", "self.numel()"),
    ("self.dim()", "self.dim()"),
    ("self.scalar_type()", "self.dtype"),
    ("grad.defined() ? grad : Tensor()", "grad if (grad is not None) else None"),
    ("weight.defined()", "weight is not None"),
    ("at::zeros({2, 3}, self_options)", "torch.zeros([2, 3], **self_options)"),
    ("{grad, result}", "[grad, result]"),
    ("grads[1] * result1", "grads[1] * result1"),
    ("2.0 / sqrt(M_PI) * grad", "(2.0 / math.sqrt(math.pi)) * grad"),
    ("1. - grad", "1.0 - grad"),
    ("n / k", "n // k"),
    ("n / 2.0", "n / 2.0"),
    ("grad / n", "grad / n"),
    ("at::where(self > other, grad, other)", "torch.where(self > other, grad, other)"),
    ("alpha.conj()", "alpha.conjugate()"),
    ("handle_r_to_c(self_scalar_type, grad)", "H.handle_r_to_c(self_scalar_type, grad)"),
    ("at::sum_to(grad, self_sym_sizes)", "H.sum_to(grad, self_sym_sizes)"),
    ("std::nullopt", "None"),
    ("std::get<0>(grad)", "grad[0]"),
    ("std::tuple<Tensor, Tensor>()", "(None, None, )"),
    ("std::vector<c10::SymInt>(dim.size(), 1)", "[1] * len(dim)"),
    ("bias_sym_sizes_opt.has_value() ? bias_sym_sizes_opt->size() : 0",
     "len(bias_sym_sizes_opt) if (bias_sym_sizes_opt is not None) else 0"),
    ("slice_backward_symint(grad, self_sym_sizes, 0, 0, n, 1)", "torch.ops.aten.slice_backward(grad, self_sym_sizes, 0, 0, n, 1)"),
    ("at::Reduction::Mean", "1"),
    ("!keepdim && p > 1", "(not keepdim) and (p > 1)"),
    ("static_cast<double>(n)", "float(n)"),
    ("self_t * result", "self_t * result"),
    ("grad_result * 2", "grad_result * 2"),
    ("original_self_t * original_self_p", "original_self_t * original_self_p"),
    ("IntArrayRef(dim)", "dim"),
])
def test_constructs_translate(formula, python):
    assert tr(formula) == python


@pytest.mark.parametrize("formula, refused", [
    ("self->sym_sizes()", "the member access '->sym_sizes' (a pointer's member)"),
    ("alpha / n", "the division '/' of values of types Scalar and int"),
    ("grad / unknown_thing", "the name 'unknown_thing'"),
    ("mystery_backward(grad)", "the call of 'mystery_backward' (not a helper"),
    ("grads[i]", "the name 'i'"),
    ("std::make_shared<Foo>(grad)", "the qualified name 'std::make_shared'"),
    ("std::get<0>(grad, 1)", "the template call 'std::get<0>(...)'"),
    ("at::native::foo(grad)", "the call of 'at::native::foo'"),
    ("self.sym_size()", "'.sym_size()' without a dimension"),
    ("alpha.toComplexFloat()", "the Scalar method '.toComplexFloat()'"),
    ("grad.frobnicate()", "the Tensor method '.frobnicate()'"),
])
def test_refusals_name_the_construct(formula, refused):
    with pytest.raises(FormulaError) as e:
        tr(formula)
    assert f"cannot translate {refused}" in str(e.value)
    assert "column" in str(e.value)


def test_helpers_come_from_the_names_given():
    with pytest.raises(FormulaError, match="handle_r_to_c"):
        tr("handle_r_to_c(self_scalar_type, grad)", helpers=())


def test_keyword_only_arguments_are_named_when_overloads_agree():
    # C++ passes sum's dtype by position; Python takes it by keyword
    assert tr("at::sum(grad, self_scalar_type)") == "torch.sum(grad, dtype=self_scalar_type)"


def test_types_of_saved_values():
    assert names.cpp_type("c10::SymIntArrayRef") == "int[]"
    assert names.cpp_type("::std::optional<at::Tensor>") == "Tensor?"
    assert names.schema_type("SymInt[]?") == "int[]?"
    assert names.schema_type("Tensor?[]") == "Tensor?[]"


# --- on the parser's records: located refusals ----------------------------------


def _example_infos(tmp_path, derivatives_text):
    import shutil
    from support.spec_facts import REPO
    from autograd_scons.codegen.parse.load_derivatives import infos_from_specs, load_specs
    native = tmp_path / "native_functions.yaml"
    shutil.copy(f"{REPO}/specs/native_functions.yaml", native)
    der = tmp_path / "derivatives.yaml"
    der.write_text(derivatives_text)
    specs = load_specs(str(native), str(der))
    return [i for i in infos_from_specs(specs) if i.op is not None], _aten_callees(), der


def _aten_callees():
    """The ATen functions the example's formulas call (`grad.unsqueeze(-1)`);
    a generator takes them from torch's native_functions.yaml."""
    return {**FUNCTIONS, "unsqueeze": Callee("unsqueeze", "torch.unsqueeze", True,
                                             (Overload(("self", "dim"), (), T, (T, "int")),))}


def test_a_planted_untranslatable_formula_is_refused_at_its_line(tmp_path):
    from support.spec_facts import REPO
    from autograd_scons.base.errors import SpecError
    from autograd_scons.codegen.formula.derivatives import translate_derivative
    text = open(f"{REPO}/specs/derivatives.yaml").read()
    planted = text.replace("  self: grad * alpha\n", "  self: grad * *alpha\n")
    assert planted != text
    line = planted.splitlines().index("  self: grad * *alpha") + 1
    infos, table, der = _example_infos(tmp_path, planted)
    helpers = ("sum_to",)
    outcomes = {}
    for info in infos:
        for d in info.derivatives:
            try:
                outcomes[(info.op, d.var_names)] = translate_derivative(info, d, helpers=helpers, functions=table)
            except SpecError as e:
                outcomes[(info.op, d.var_names)] = str(e)
    message = outcomes[("ScaleBackward0", ("self",))]
    assert isinstance(message, str), message
    assert message.startswith(f"{der}:{line}: entry 'scale': cannot translate pointer operator '*'") or \
        message.startswith(f"{der}:{line}: entry 'scale': pointer operator '*'"), message
    # the others translate, saved values with them
    row_sum = outcomes[("RowSumBackward0", ("self",))]
    assert row_sum.python == "grad.unsqueeze(-1).expand(self_sym_sizes)"
    assert row_sum.saved == (("self_sym_sizes", "self.shape"),)

