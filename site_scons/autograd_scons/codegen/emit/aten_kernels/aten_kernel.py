"""The Autograd kernel of one of ATen's own ops, as torch's VariableType has
it, for a patch of the installed torch (`patch-torch --kernels`, and the
ops of an edit that changes what a Function saves): registered at the
`Autograd` key over libtorch's own (docs/patching-torch.md).

What libtorch's kernel does, in its order (torchgen's gen_variable_type is
the reference for the behaviour): each non-optional tensor argument is
checked defined (`unpack`); `_any_requires_grad` over the inputs with a
formula (and the entry's output_differentiability condition); whether each
forward formula's inputs carry a tangent; for an in-place op `check_inplace`
and the clone of `self` its formulas may need; the inputs without a formula
checked not to require grad; the Function created, its edges and inputs
saved (those used by one formula only, guarded by that input's
`should_compute_output`); the call below autograd (`redispatch` with the
key set after Autograd: ADInplaceOrView then runs for views and in-place
ops, which bumps the version counter and makes views); `set_history`, or
`rebase_history` for an in-place op; the complex-output check of the ops
torch does not differentiate for complex; the forward formulas, each
output's tangent set after all of them; the outputs saved.  An op with a
backward formula and no forward one decomposes for forward AD as libtorch
does (its TorchScript decomposition, when one is registered).

    text = render_aten_kernel(kernel)      # AtenKernel -> ops/aten_<stem>.cpp
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...model.aten_op import OWN_NAMESPACE, AtenKernel
from ...model.autograd import DifferentiabilityInfo, uses_ident
from ...model.cpp import ArrayRefCType, OptionalCType, intArrayRefT, return_names, scalarT, stringViewT, symIntArrayRefT
from ...model.extension_op import dispatcher_signature as signature_of, parameters_of
from ...model.native import NativeFunction
from ...model.schema import INPLACE, OUT, is_tensor_like
from ...templates import load, string_literal
from ...tree import BANNER
from .aten_forward_ad import forward_statements, fw_condition, inplace_forward

_ARRAYS = (intArrayRefT, symIntArrayRefT, ArrayRefCType(scalarT))


@dataclass
class _Op:
    """What the body's parts share."""
    k: AtenKernel
    name: str                      # the C++ API name (`add_`), as ATen's messages say it
    base: str                      # the op's base name (`add`)
    inplace: bool
    view: bool
    args: list                     # schema-order arguments
    diff_inputs: list              # (name, is list) of the differentiable tensor inputs
    with_formula: list             # those with a backward formula, in argument order
    outputs: list                  # (name, C++ type) of the differentiable outputs
    returns: list                  # the return names
    fw: list                       # forward derivatives (in-place ones transformed)


def render_aten_kernel(k: AtenKernel) -> dict[str, str]:
    f, info = k.func, k.info
    fs = f.func
    ret, types = signature_of(f)
    o = _facts(k)
    names = [a.name for a in o.args]
    unpack, unpacked = _unpack(o)
    try_decomposition = not o.fw and not o.inplace and bool(fs.returns) and fs.kind() != OUT
    body = list(unpack)
    body += [f"[[maybe_unused]] auto _any_requires_grad = compute_requires_grad( "
             f"{', '.join(n for n, _ in o.with_formula)} );"]
    if info.output_differentiability_conditions:
        body.append(f"_any_requires_grad &= ({info.output_differentiability_conditions[0]});")
    for fd in o.fw:
        cond = fw_condition(fd, o.diff_inputs)
        if info.output_differentiability_conditions:
            cond = f"({info.output_differentiability_conditions[0]}) && {cond}"
        body.append(f"[[maybe_unused]] auto {_fw_name(fd)} = {cond};")
    if o.inplace:
        body += [f"check_inplace({n}, _any_requires_grad);" for n, _ in o.outputs]
        body.append("::std::optional<at::Tensor> original_self;")
        needing = [_fw_name(fd) for fd in o.fw if fd.needs_original_self]
        if needing:
            body += load("aten_clone_self.cpp").lines(cond=" || ".join(needing))
    body += [f'check_no_requires_grad({n}, "{n}", "{o.name}");' for n, _ in o.diff_inputs
             if n not in {m for m, _ in o.with_formula} and n not in info.non_differentiable_arg_names
             and n != "output"]
    own = k.function_class.startswith(OWN_NAMESPACE + "::")
    body += load("aten_grad_fn.cpp").lines(
        function=k.function_class, args=", ".join(n for n, _ in o.with_formula),
        bind_python=["::autograd_functions_load::bind_python();"] if own else [],
        save=_save(o, info.all_saved_inputs, is_output=False)
        + [f"grad_fn->{n}_size_ = {n}.size();" for n, is_list in o.with_formula if is_list])
    body += _call(o, ret, types, unpacked, names, try_decomposition)
    if o.outputs:
        history = "rebase" if (o.inplace or fs.kind() == OUT) and not o.view else "set"
        body += load("aten_history.cpp").lines(history=history, outs=", ".join(n for n, _ in o.outputs))
    if not k.complex_ok:   # (as torch's: a Tensor output, not a list one, nor an in-place op's reference)
        body += [f'throw_error_for_complex_autograd({n}, "{o.base}");' for n, t in o.outputs if t == "at::Tensor"]
    if o.fw:
        body += forward_statements(o.fw, o.diff_inputs, o.inplace)
    elif not try_decomposition:
        body += _forbid(o)
    saved_outputs = _save(o, info.all_saved_outputs, is_output=True)
    if saved_outputs:
        body += load("aten_save_outputs.cpp").lines(save=saved_outputs)
    if fs.returns:
        body.append(f"return {_return_value(o)};")
    kernel = f"{k.stem}_autograd"
    files = {k.path: load("aten_kernel.cpp").substitute(
        banner=BANNER, op=k.op, class_header=k.class_header, ns=OWN_NAMESPACE, ret=ret, kernel=kernel,
        params=parameters_of(f, types), body=body,
        registration=load("aten_registration.cpp").lines(
            ns=OWN_NAMESPACE, stem=k.stem, op=string_literal(k.op), name=string_literal(str(fs.name)),
            kernel=kernel))}
    return files


def _facts(k: AtenKernel) -> _Op:
    f, info = k.func, k.info
    fs = f.func
    args = list(fs.schema_order_arguments())
    non_diff = set(info.non_differentiable_arg_names)
    diff_inputs = [(a.name, str(a.type).endswith("[]")) for a in fs.arguments.flat_non_out
                   if is_tensor_like(a.type) and a.name not in non_diff]
    formula_names = {n for d in info.derivatives for n in d.var_names}
    with_formula = [(n, is_list) for n, is_list in diff_inputs if n in formula_names]
    rnames = return_names(fs)
    cpp_types = [signature_of(f)[0]] if len(fs.returns) == 1 else _tuple_types(signature_of(f)[0])
    flags = info.output_differentiability
    candidates = [(n, t, r) for n, t, r in zip(rnames, cpp_types, fs.returns) if is_tensor_like(r.type)
                  and n not in non_diff]
    if flags is not None:
        outputs = [(n, t) for (n, t, r), ok in zip(zip(rnames, cpp_types, fs.returns), flags)
                   if ok]
    else:
        outputs = [(n, t) for n, t, _ in candidates]
        if info.uses_single_grad:
            outputs = outputs[:1]
    inplace = fs.kind() == INPLACE
    fw = inplace_forward(info, k.exact) if inplace else [_plain(fd) for fd in info.forward_derivatives]
    return _Op(k, api_name(f), fs.name.base, inplace, f.is_view_op, args, diff_inputs, with_formula,
               outputs, rnames, fw)


def api_name(f: NativeFunction) -> str:
    """ATen's C++ name of the op (`add_`, `sum`), as its messages spell it."""
    return f.func.name.name


def _tuple_types(text: str) -> list[str]:
    """The element types of `::std::tuple<a,b>` (no nested templates with commas in ATen's returns)."""
    inner = text[text.index("<") + 1:text.rindex(">")]
    out, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        depth += {"<": 1, ">": -1}.get(c, 0)
        if c == "," and depth == 0:
            out.append(inner[start:i].strip())
            start = i + 1
    return out + [inner[start:].strip()]


def _plain(fd):
    from .aten_forward_ad import Forward
    return Forward(fd.formula, fd.var_names, fd.var_types, fd.required_inputs_fw_grad,
                   fd.required_inputs_primal, False, False, fd.line)


def _fw_name(fd) -> str:
    return "_any_has_forward_grad_" + "_".join(fd.var_names)


def _unpack(o: _Op) -> tuple[list[str], list[str]]:
    """`auto& self_ = unpack(self, "self", 0);` for each non-optional tensor
    argument (undefined: ATen's error), and the names the call passes."""
    lines, names = [], []
    for i, a in enumerate(o.args):
        t = str(a.type)
        if not is_tensor_like(a.type) or t.endswith("?") or t == "Tensor?[]":
            names.append(a.name)
            continue
        ref = "&" if not t.endswith("[]") else ""
        lines.append(f'auto{ref} {a.name}_ = unpack({a.name}, "{a.name}", {i});')
        names.append(f"{a.name}_")
    return lines, names


def _call(o: _Op, ret: str, types: list[str], unpacked: list[str], names: list[str],
          try_decomposition: bool) -> list[str]:
    fs = o.k.func.func
    signature = f"{ret}({', '.join(types)})"
    lookup = load("op_lookup.cpp").lines(name=f"aten::{fs.name.name}", overload=fs.name.overload,
                                         signature=signature)
    guard = "AutoDispatchBelowAutograd" if o.view or o.inplace or fs.kind() == OUT or \
        any(a.is_write for a in o.args) else "AutoDispatchBelowADInplaceOrView"
    args = ", ".join(unpacked)
    if o.inplace or not fs.returns or any(a.is_write for a in o.args):
        return lookup + load("aten_call_void.cpp").lines(guard=guard, args=args)
    if try_decomposition:
        cond = " || ".join(_fw_input(n, is_list) for n, is_list in o.diff_inputs) or "false"
        call = load("aten_call_decomposition.cpp").lines(
            guard=guard, args=args, cond=f"({cond})", name=o.name, ret=ret, names=", ".join(names))
    else:
        call = load("aten_call.cpp").lines(guard=guard, args=args)
    tie = f"auto {o.returns[0]}" if len(fs.returns) == 1 else f"auto [{', '.join(o.returns)}]"
    moved = "std::move(_tmp)" if any(is_tensor_like(r.type) for r in fs.returns) else "_tmp"
    return lookup + call + [f"{tie} = {moved};"]


def _fw_input(n: str, is_list: bool) -> str:
    return f"isFwGradDefinedTensorList({n})" if is_list else f"isFwGradDefined({n})"


def _forbid(o: _Op) -> list[str]:
    if not o.diff_inputs:
        return []
    cond = " || ".join(_fw_input(n, is_list) for n, is_list in o.diff_inputs)
    return load("aten_fw_forbid.cpp").lines(cond=cond, name=o.name)


def _guard(o: _Op, attr) -> Optional[str]:
    """The condition under which an input is saved: only when the one
    formula that uses it is wanted (a tensor, several formulas, no list)."""
    info = o.k.info
    if any(is_list for _, is_list in o.with_formula) or "backward" in info.name or len(o.with_formula) <= 1:
        return None
    if not attr.type.is_tensor or str(attr.type.cpp_type()) != "at::Tensor":
        return None
    used_in = [d for d in info.derivatives if attr in d.saved_inputs]
    if len(used_in) != 1:
        return None
    d = used_in[0]
    if len(d.var_names) != 1:
        return _wrap_opt_if_condition(attr.name, d.formula)
    edge = [n for n, _ in o.with_formula].index(d.var_names[0])
    return f"grad_fn->should_compute_output({edge})"


def _wrap_opt_if_condition(name: str, formula: str) -> Optional[str]:
    """`wrap_opt_if(x, cond)` in a formula for several inputs: save x when cond."""
    import re
    at = formula.find(f"wrap_opt_if({name},")
    if at < 0:
        return None
    m = re.match(rf"wrap_opt_if\({re.escape(name)},(.*?)\)", formula[at:])
    if m is None:
        return None
    return re.sub(r"grad_input_mask\[(\d+)\]", r"grad_fn->should_compute_output(\1)", m.group(1).strip())


def _save(o: _Op, attrs, *, is_output: bool) -> list[str]:
    out: list[str] = []
    for a in sorted(attrs, key=lambda a: a.name):
        prepend = None
        expr = a.expr
        t = a.type
        member = a.name
        if t.is_tensor or (is_output and t == scalarT):
            var = a.name
            member = a.name + "_"
            if var == "self" and o.inplace and not is_output:
                prepend = "if (!original_self.has_value()) original_self = self.clone();"
                var = "original_self.value()"
            if o.inplace and is_output:
                expr = "SavedVariable(self, true, self.is_view())"
            else:
                expr = f"SavedVariable({var}, {'true' if is_output else 'false'})"
        elif t.is_tensor_list:
            expr = f"make_saved_variable_list({a.name}, false)"
            member = a.name + "_"
        elif t in _ARRAYS:
            expr = f"{expr}.vec()"
        elif t == stringViewT:
            expr = f"std::string({expr})"
        elif t == OptionalCType(stringViewT):
            expr = f"{expr}.has_value() ? ::std::optional<std::string>(std::string({expr}.value())) : ::std::nullopt"
        guard = None if is_output else _guard(o, a)
        lines = ([prepend] if prepend else []) + [f"grad_fn->{member} = {expr};"]
        out += lines if guard is None else load("aten_guarded_save.cpp").lines(guard=guard, save=lines)
    return out


def _return_value(o: _Op) -> str:
    fs = o.k.func.func
    if len(fs.returns) == 1:
        return o.returns[0]
    return f"std::make_tuple({', '.join(f'std::move({n})' for n in o.returns)})"


def uses_result(info: DifferentiabilityInfo) -> bool:
    return any(uses_ident(d.formula, "result") for d in info.derivatives)
