"""Forward-mode AD in an extension op's Autograd kernel (emit/op_kernels/kernels.py).

What PyTorch's VariableType does for ATen ops, from the entry's forward
formulas (`result: ...`, `auto_element_wise`, `auto_linear`, several outputs
under one key): before the call, note whether any differentiable input is a
dual tensor; after it, unpack each input's tangent (`x_t`, a zero tensor if
that input has none) and primal (`x_p`), evaluate the formula and attach
the tangent to the output (`_set_fw_grad`).  In-place variants update the
tangent of `self` in place.  An op that has no formula for one of its
differentiable outputs refuses dual inputs with an error naming it, instead
of returning an output without tangent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ...model.autograd import DifferentiabilityInfo, ForwardDerivative, differentiable_outputs, uses_ident, written_as
from ...model.cpp import OPTIONAL_TENSOR, CType, return_names
from autograd_scons.base.errors import SpecError
from ...model.schema import INPLACE, OUT, is_tensor_like
from ...templates import Template, load
from ..lines import at_formula

# `foo_t` / `foo_p` identifiers that are C++ types, not tangents or primals.
_TYPE_STEMS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "size", "ssize",
               "ptrdiff", "intptr", "uintptr", "char16", "char32", "wchar", "nullptr", "max_align", "time",
               "clock", "off", "pid", "mode", "dev", "ino", "div", "ldiv", "lldiv", "mbstate", "fpos", "va"}
_SUFFIXED = re.compile(r"(?<![\w.:>])([A-Za-z_]\w*?)_(t|p)\b")
_IF_BOTH_DEFINED = Template("if (${x}.defined() && ${n}.defined()) {")


@dataclass
class ForwardAD:
    """The kernel's forward-AD statements: before the redispatch, after it,
    and the outputs they refer to by name (bound by the kernel)."""
    before: list[str]
    after: list[str]
    outputs: set[str]
    needs_prelude: bool  # formulas are C++ written against the Functions' prelude


def forward_ad(unit, info: Optional[DifferentiabilityInfo], fw_op: Optional[str]) -> ForwardAD:
    """`fw_op`: C++ that yields the typed handle of the functional op (for
    an extension's `auto_linear`, which calls the op itself on tangents)."""
    f = unit.func
    fs = f.func
    label = f"{f.namespace}::{fs.name}"
    if info is None or fs.kind() == OUT:
        inputs = [(a.name, _param_kind(a)) for a in fs.schema_order_arguments() if is_tensor_like(a.type)]
        return ForwardAD(_refuse(inputs, label, "it has no forward-mode formula"), [], set(), False)
    inputs = [(b.name, _binding_kind(b.ctype)) for b in info.args_with_derivatives
              if b.argument is not None and is_tensor_like(b.argument.type)]
    if not inputs:
        return ForwardAD([], [], set(), False)
    ofs = info.func.func  # the functional's outputs, for an in-place variant using its entry
    rnames = [("result" if x == "self" else x) for x in return_names(ofs)]
    douts = [o.name for o in differentiable_outputs(info)]
    targets = {}
    for fd in info.forward_derivatives:
        _check_names(fd, info, unit)
        for n in fd.var_names:
            targets[n] = _output_index(n, ofs)
            # a list of tangents: only from an extension's op itself on the tangents (a view's)
            listed = str(ofs.returns[targets[n]].type) == "Tensor[]" and written_as(fd, info) == "auto_linear"
            if str(ofs.returns[targets[n]].type) != "Tensor" and not (listed and fw_op is not None):
                raise SpecError(f"a forward formula for the '{ofs.returns[targets[n]].type}' output '{n}' is "
                                f"not supported (only Tensor outputs get tangents)", info.file or None,
                                formula_line(info, fd) or None, str(info.func.func))
    if not douts and fs.kind() != INPLACE:
        return ForwardAD([], [], set(), False)  # no output gets a tangent: nothing to refuse
    covered = {rnames[i] for i in targets.values()}
    missing = [o for o in douts if o not in covered]
    if fs.kind() == INPLACE:
        missing = [] if info.forward_derivatives else ["self"]
    if missing or not info.forward_derivatives:
        why = f"derivatives.yaml has no forward formula for its output {', '.join(repr(m) for m in missing)}"
        return ForwardAD(_refuse(inputs, label, why), [], set(), False)
    any_line = " || ".join(_defined(n, k) for n, k in inputs)
    before = [f"const bool _any_has_fw_grad = {any_line};", "(void)_any_has_fw_grad;"]
    after: list[str] = []
    outputs: set[str] = set()
    inplace = fs.kind() == INPLACE
    for k, fd in enumerate(info.forward_derivatives):
        formula = _formula(fd, info, unit, inputs, fw_op)
        if inplace and str(info.func.func) != str(fs):  # the functional entry's formula, on self
            formula = _sub(_sub(formula, "self_p", "original_self_p"), "result", "self_p")
            if uses_ident(formula, "original_self_p"):
                before += load("fw_original_self.cpp").lines()
        idx = [targets[n] for n in fd.var_names]
        names = ["self" if inplace else rnames[i] for i in idx]
        if not inplace:
            outputs.update(names)
            outputs.update(r for r in rnames if uses_ident(formula, r))
        listed = [str(ofs.returns[i].type) == "Tensor[]" for i in idx] == [True]
        after += _located(info.function, k, _apply(formula, fd, names, idx, rnames, inputs, inplace, listed))
    return ForwardAD(before, after, outputs, True)


def _refuse(inputs, label: str, why: str) -> list[str]:
    if not inputs:
        return []
    cond = " || ".join(_defined(n, k) for n, k in inputs)
    # ATen's sentence first (its words: "Trying to use forward AD with"), then ours
    name = label.split("::")[-1].split(".")[0]
    return [f"TORCH_CHECK_NOT_IMPLEMENTED(!({cond}),",
            f'    "Trying to use forward AD with {name} that does not support it because it has not been '
            f'implemented yet. {label}: forward-mode AD is not supported: {why} (a dual tensor or '
            f'torch.func.jvp reached it)");']


def _located(op: str, k: int, lines: list[str]) -> list[str]:
    """The line computing forward formula k numbered as its yaml line (emit/lines.py)."""
    at = next(j for j, x in enumerate(lines) if "_new_fw_grad = " in x or ") = " in x)
    return lines[:at] + at_formula(op, f"fw{k}", [lines[at]]) + lines[at + 1:]


def _apply(formula: str, fd: ForwardDerivative, names: list[str], idx: list[int], rnames: list[str],
           inputs, inplace: bool, listed: bool = False) -> list[str]:
    body: list[str] = []
    for n, kind in inputs:
        if n in fd.required_inputs_fw_grad or (inplace and n == "self"):
            body += _tangent(n, kind)
        if n in fd.required_inputs_primal or (inplace and n == "self"):
            body += _primal(n, kind)
    for i, r in enumerate(rnames):  # `resultN` names an output that has its own name
        if f"result{i}" != r and len(rnames) > 1 and uses_ident(formula, f"result{i}") and not inplace:
            body.append(f"auto& result{i} = {r};")
    fresh = [f"{n}_new_fw_grad" for n in names]
    if listed:  # a list output: one tangent per element
        return load("fw_block.cpp").lines(body=body + load("fw_list_tangents.cpp").lines(n=names[0],
                                                                                           formula=formula))
    if len(names) == 1:
        body.append(f"at::Tensor {fresh[0]} = {formula};")
    else:
        body += [f"at::Tensor {x};" for x in fresh] + [f"std::tie({', '.join(fresh)}) = {formula};"]
    if inplace:
        body += load("fw_inplace_tangent.cpp").lines()
    else:
        for n, x in zip(names, fresh):
            body += [_IF_BOTH_DEFINED.substitute(x=x, n=n),
                     f"  {n}._set_fw_grad({x}, /*level=*/0, /*is_inplace_op=*/false);", "}"]
    return load("fw_block.cpp").lines(body=body)


def _tangent(n: str, kind: str) -> list[str]:
    if kind == "list":
        return []  # lists are passed as they are; the formula's helper reads their tangents
    t = n if kind == "tensor" else f"{n}_tensor"
    pre = [] if kind == "tensor" else [f"const at::Tensor {t} = {n}.has_value() ? *{n} : at::Tensor();"]
    return pre + [f"at::Tensor {n}_t_raw = {t}.defined() ? {t}._fw_grad(/*level=*/0) : at::Tensor();",
                  f"at::Tensor {n}_t = ({n}_t_raw.defined() || !{t}.defined()) ? {n}_t_raw",
                  f"    : at::_efficientzerotensor_symint({t}.sym_sizes(), {t}.options());"]


def _primal(n: str, kind: str) -> list[str]:
    if kind == "list":
        return []
    if kind == "tensor":
        return [f"at::Tensor {n}_p = {n}._fw_primal(/*level=*/0);"]
    return [f"at::Tensor {n}_p = ({n}.has_value() && {n}->defined()) ? {n}->_fw_primal(/*level=*/0) "
            f": at::Tensor();"]


def _formula(fd: ForwardDerivative, info: DifferentiabilityInfo, unit, inputs, fw_op: Optional[str]) -> str:
    """The formula as C++; an extension's auto_linear calls its own op on the
    tangents (the expansion names `at::<op>`, which only ATen has)."""
    if written_as(fd, info) != "auto_linear" or fw_op is None:
        return fd.formula
    diff = {n for n, _ in inputs}
    args = [a.name + "_t" if a.name in diff else a.name for a in info.func.func.schema_order_arguments()]
    return f"{fw_op}.call({', '.join(args)})"


def _check_names(fd: ForwardDerivative, info: DifferentiabilityInfo, unit) -> None:
    """A `foo_t` / `foo_p` in a formula must be a differentiable input's."""
    arg_names = {a.name for a in info.func.func.schema_order_arguments()}
    diff = {b.name for b in info.args_with_derivatives}
    for m in _SUFFIXED.finditer(fd.formula):
        stem, what = m.group(1), "tangent" if m.group(2) == "t" else "primal"
        if stem in diff or stem in _TYPE_STEMS or stem.startswith("original_"):
            continue
        if stem in arg_names:
            why = f"'{stem}' has no {what}: it is not a differentiable input"
        else:
            why = f"'{stem}' is not an argument of '{info.func.func}'"
        key = ", ".join(fd.var_names)
        raise SpecError(f"forward formula for '{key}' uses '{m.group(0)}', but {why}",
                        info.file or None, formula_line(info, fd) or None, str(info.func.func))


def formula_line(info: DifferentiabilityInfo, fd: ForwardDerivative) -> int:
    """The line of the formula's key (the entry's where the parse recorded none)."""
    return fd.line or info.line


def _output_index(name: str, fs) -> int:
    for i, r in enumerate(fs.returns):
        if r.name == name:
            return i
    if name == "result":
        return 0
    return int(name[len("result"):])


def _sub(text: str, old: str, new: str) -> str:
    return re.sub(r"(?<![\w.])" + re.escape(old) + r"(?!\w)", new, text)


def _defined(n: str, kind: str) -> str:
    return f"isFwGradDefinedTensorList({n})" if kind == "list" else f"isFwGradDefined({n})"


def _binding_kind(t: CType) -> str:
    if t.is_tensor_list:
        return "list"
    return "optional" if t.remove_const_ref() == OPTIONAL_TENSOR else "tensor"


def _param_kind(a) -> str:
    t = str(a.type)
    if t.startswith("Tensor[]") or t.startswith("Tensor?[]"):
        return "list"
    return "optional" if t.startswith("Tensor?") else "tensor"
