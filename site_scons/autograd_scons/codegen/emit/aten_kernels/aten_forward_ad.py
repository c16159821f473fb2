"""Forward-mode AD in an ATen op's Autograd kernel (aten_kernels/aten_kernel.py), as
libtorch's VariableType computes it, so that a patched kernel's tangents are
libtorch's bit for bit.

Per forward formula: a condition (does any input it reads the tangent of
carry one), then, if so, each such input's tangent (`x_t`: its own, or
zeros when it has none: an efficient zero tensor, a real one for the `self`
an in-place op writes) and primal (`x_p`), the formula into an optional;
after every formula, each output's tangent is set (so that one formula
never sees another's output with a tangent already).  An in-place op
reusing its functional entry's formula reads `original_self_*` where the
formula read `self_*` (a clone made before the call) and `self_p` where it
read `result`, and writes the tangent of `self` in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...model.autograd import DifferentiabilityInfo
from ...templates import load


@dataclass(frozen=True)
class Forward:
    formula: str
    var_names: tuple
    var_types: tuple
    required_inputs_fw_grad: tuple
    required_inputs_primal: tuple
    needs_original_self: bool
    reusing_outplace: bool
    line: int = 0


def _word(name: str) -> str:
    # (a name as a whole word; the character either side is kept)
    return r"(^|\W)" + re.escape(name) + r"($|\W)"


def _replace(formula: str, old: str, new: str) -> str:
    return re.sub(_word(old), lambda m: f"{m.group(1)}{new}{m.group(2)}", formula)


def _used(formula: str, name: str) -> bool:
    return re.search(_word(name), formula) is not None


def _single_method_on_self_t(formula: str):
    """(method, arguments) when `formula` is one call `self_t.m(...)`, else None."""
    m = re.fullmatch(r"self_t.([\w]*)\((.*)\)", formula)
    if not m:
        return None
    level = 1
    for ch in m.group(2):
        if ch == ")":
            level -= 1
            if level == 0:
                return None
        elif ch == "(":
            level += 1
    return m.group(1), m.group(2)


def inplace_forward(info: DifferentiabilityInfo, exact: bool) -> list[Forward]:
    """The forward formula of an in-place op, from its own entry (`exact`)
    or its functional entry's."""
    if not info.forward_derivatives:
        return []
    if len(info.forward_derivatives) != 1:
        raise ValueError(f"an in-place op has one output, but '{info.func.func}' has "
                         f"{len(info.forward_derivatives)} forward formulas")
    fd = info.forward_derivatives[0]
    formula = fd.formula
    if _used(formula, "self_p"):
        if exact:
            raise ValueError(f"the in-place formula of '{info.func.func}' reads self_p, the value it overwrites")
        formula = _replace(_replace(formula, "self_p", "original_self_p"), "self_t", "original_self_t")
    formula = _replace(formula, "result", "self_p")
    primals = tuple(fd.required_inputs_primal)
    if _used(formula, "self_p"):
        primals = primals + ("self",)
    if not exact:
        method = _single_method_on_self_t(formula)
        if method is not None and method[0] == info.name:
            formula = f"self_t_raw.defined() ? self_t_raw.{method[0]}_({method[1]}) : {formula}"
        else:
            formula = f"self_t_raw.defined() ? self_t_raw.copy_({formula}) : {formula}"
    original = _used(formula, "original_self_p") or _used(formula, "original_self_t")
    tangents = tuple(fd.required_inputs_fw_grad)
    if not exact and "self" not in tangents:
        tangents += ("self",)   # (the rewrite writes self's tangent: torch's build would not compile without it)
    return [Forward(formula, ("self",), fd.var_types, tangents, primals, original, not exact, fd.line)]


def _is_list(t) -> bool:
    return str(t).endswith("[]")


def fw_condition(fd: Forward, inputs: list) -> str:
    """Whether any input whose tangent `fd` reads carries one; `inputs`:
    (name, is list) of the differentiable inputs."""
    if not fd.required_inputs_fw_grad:
        return "true"   # (a formula on a single list input, stack's: always run)
    checks = [f"isFwGradDefinedTensorList({n})" if is_list else f"isFwGradDefined({n})"
              for n, is_list in inputs if n in fd.required_inputs_fw_grad]
    return f"({' || '.join(checks)})"


def forward_statements(fws: list[Forward], inputs: list, inplace: bool) -> list[str]:
    out: list[str] = []
    setters: list[str] = []
    flag = "true" if inplace else "false"
    for fd in fws:
        res = "_".join(fd.var_names)
        unpacked: list[str] = []
        zeros = "_efficientzerotensor_symint"
        for n, _ in inputs:
            zeros = "zeros_symint" if inplace and n == "self" else "_efficientzerotensor_symint"
            if n in fd.required_inputs_fw_grad:
                unpacked += load("aten_fw_tangent.cpp").lines(name=n, value=n, zeros=zeros)
                if zeros == "_efficientzerotensor_symint":
                    unpacked.append(f"update_wrapped_number({n}_tensor, {n}_t);")
            if n in fd.required_inputs_primal:
                unpacked.append(f"auto {n}_p = toNonOptPrimal({n});")
        if fd.needs_original_self:
            unpacked += load("aten_fw_tangent.cpp").lines(name="original_self", value="original_self", zeros=zeros)
            unpacked.append("auto original_self_p = toNonOptPrimal(original_self);")
        elif inplace and fd.reusing_outplace:
            unpacked.append("self_t = GradMode::is_enabled() ? self_t.clone() : self_t;")
        cond = "_any_has_forward_grad_" + res
        types = [str(t) for t in fd.var_types]
        if all(t == "Tensor" or (t.startswith("Tensor(") and not t.endswith("[]")) for t in types):
            if len(types) == 1:
                optional = "::std::optional<at::Tensor>"
                setters += load("aten_fw_set_tensor.cpp").lines(out=fd.var_names[0] if not inplace else "self",
                                                                 inplace=flag)
                cond += f" && ({fd.var_names[0]}.defined())"
            else:
                optional = f"::std::optional<::std::tuple<{','.join(['at::Tensor'] * len(types))}>>"
                for i, single in enumerate(fd.var_names):
                    setters += load("aten_fw_set_multi.cpp").lines(all=res, index=str(i), out=single)
        elif len(types) == 1 and _is_list(types[0]):
            optional = "::std::optional<::std::vector<at::Tensor>>"
            setters += load("aten_fw_set_list.cpp").lines(out=res, inplace=flag)
        else:
            raise ValueError(f"a forward formula for outputs of type {', '.join(types)} is not supported")
        out += load("aten_fw_formula.cpp").lines(optional=optional, res=res, cond=cond, unpacked=unpacked,
                                                 formula=fd.formula)
    return out + setters
