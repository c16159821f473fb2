"""Operator registration and Autograd-key kernels for an extension's own ops.

For ATen ops libtorch already has both; for the ops of an extension (any
namespace but `aten`) this writes what PyTorch's VariableType does for
ATen: per native function, one translation unit `ops/<ns>_<name>.cpp` that
declares the schema and registers an Autograd kernel (op_kernels/registration.py) which creates the op's autograd Function, saves what its info says
(inputs before the call, outputs after), connects the graph and redispatches
below autograd to the backend kernels the extension wrote by hand.

One TU per native function keeps the incremental guarantee: a change to one
op's formula changes only that op's Function .cpp; its kernel TU includes the
Function's header only, which changes only when the saved members do.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ...model.autograd import DifferentiabilityInfo, SavedAttribute, differentiable_outputs
from ...model.cpp import ArrayRefCType, OptionalCType, intArrayRefT, return_names, scalarT, stringViewT, symIntArrayRefT
from ...model.extension_op import KernelUnit, dispatcher_signature, parameters_of
from ...model.native import NativeFunction
from ...model.schema import INPLACE, OUT
from ...templates import load
from ...tree import BANNER, PRELUDE_IMPL_H, function_file, include, op_file
from .callers import callee_includes, caller_declaration, caller_definition
from .dispatch import declarations, registrations
from ..lines import AT_FORMULA, INCLUDE, number_back
from ..local_names import check_kernel_names
from .registration import registration
from .forward_ad import ForwardAD, forward_ad
from ..options import EmitOptions
from .transform_block import transform_kernels
from .views import copy_kernel, inverse_declaration, view_kernels
from .vmap import rule_declaration

# Saved views copied with `.vec()`.
_ARRAY_VIEWS = (intArrayRefT, symIntArrayRefT, ArrayRefCType(scalarT))
_RETURN_RESULT = "return _result;"


# ------------------------------------------------------------------ render


def render_kernel(unit: KernelUnit, opts: EmitOptions, callees: Sequence[str] = ()) -> dict[str, str]:
    """`ops/<stem>.h` and `ops/<stem>.cpp`; `callees`: the stems of the ops
    its forward formulas call (emit/op_kernels/callers.py)."""
    f = unit.func
    fs = f.func
    dispatch, view = f.dispatch, f.view
    ret, params = dispatcher_signature(f)
    args = fs.schema_order_arguments()
    decl = parameters_of(f, params)
    op = f"{f.namespace}::{fs}"
    inverse = inverse_declaration(f, view, params) if view is not None else None
    files = {op_file(unit.stem, ".h"): load("op_kernels.h").substitute(
        banner=BANNER, op=op, type_includes=load("kernel_types.h").lines(),
        caller=caller_declaration(unit, opts.ns, ret, params),
        kernels=declarations(f, dispatch, (ret, decl), inverse) if dispatch is not None else [],
        batch_rule=rule_declaration(f, f.vmap) if f.vmap is not None else [])}
    own_header = [f'#include "{include(unit.path, op_file(unit.stem, ".h"))}"']
    caller = caller_definition(unit, opts.ns, ret, params)
    transforms, transform_impls = transform_kernels(unit, opts.ns)
    if dispatch is not None and dispatch.implicit:
        files[unit.path] = load("op_registration.cpp").substitute(
            banner=BANNER, op=op, own_header=own_header, caller=caller, transforms=transforms,
            why="differentiated through its CompositeImplicitAutograd kernel",
            registration=registration(unit, opts, registrations(f, dispatch) + transform_impls))
        return files
    if unit.uses_autograd_fallback():
        files[unit.path] = load("op_registration.cpp").substitute(
            banner=BANNER, op=op, own_header=own_header, caller=caller, transforms=transforms,
            why="no derivatives entry: no Autograd kernel, torch's autograd fallback applies",
            registration=registration(unit, opts, (registrations(f, dispatch) if dispatch is not None else [])
                                      + transform_impls))
        return files
    check_kernel_names(f, [a.name for a in args])
    impls = [("Autograd", f"{unit.stem}_autograd")] + (registrations(f, dispatch) if dispatch is not None else [])
    holes = _autograd_kernel(unit, opts, ret, params, view is not None)
    located = any(AT_FORMULA in line for line in holes["body"])
    more: list[str] = []
    kinds = "Autograd kernel"
    if view is not None:
        more, extra = view_kernels(unit, view, ret, params, decl)
        impls += extra
        kinds = "Autograd, ADInplaceOrView and Functionalize kernels"
    elif unit.copy_of is not None:
        more, extra = copy_kernel(unit, ret, params, decl)
        impls += extra
        kinds = "Autograd and CompositeExplicitAutograd kernels"
    files[unit.path] = number_back(load("op_kernel.cpp").substitute(
        banner=BANNER, op=op, ns=opts.ns, ret=ret, kernel=f"{unit.stem}_autograd", params=decl, kernels=kinds,
        view_includes=load("view_includes.cpp").lines() if view is not None else [], view_kernels=more,
        own_header=own_header, callee_headers=callee_includes(unit.path, callees), caller=caller,
        derivative_lines=INCLUDE if located else [], transforms=transforms,
        registration=registration(unit, opts, impls + transform_impls), **holes), f"../{unit.path}")
    return files


def _autograd_kernel(unit: KernelUnit, opts: EmitOptions, ret: str, params: list[str], is_view: bool) -> dict:
    """The holes of templates/op_kernel.cpp that the Autograd kernel fills."""
    f = unit.func
    info = unit.info if unit.info is not None and unit.info.op else None
    if unit.info is not None and info is None:  # nothing differentiable: no tangents either
        fw = ForwardAD([], [], set(), False)
    else:   # (the functional's handle for an in-place variant differentiated by its entry)
        fw = forward_ad(unit, info, "op" if info is None or str(info.func.func) == str(f.func) else _handle(info.func))
    # No file or line here: inserting an entry must not rewrite every kernel.
    function_header = [f'#include "{include(unit.path, function_file(info.function, ".h"))}"'] if info is not None else []
    # forward formulas see what backward formulas see
    prelude = [f'#include "{include(unit.path, PRELUDE_IMPL_H)}"'] if fw.needs_prelude else []
    # the one save-time helper that lives in FunctionsManual.h
    manual = info is not None and any("strides_or_error" in a.expr for a in info.all_saved_inputs)
    return {"function_header": function_header, "prelude_impl": prelude,
            "manual_include": load("op_manual_include.cpp").lines() if manual else [],
            "manual_using": load("op_manual_using.cpp").lines() if manual else [],
            "body": _body(unit, info, params, ret, fw, is_view)}


def _handle(func: NativeFunction) -> str:
    """The typed dispatcher handle of `func`, as an expression."""
    ret, params = dispatcher_signature(func)
    fs = func.func
    return (f'c10::Dispatcher::singleton().findSchemaOrThrow("{func.namespace}::{fs.name.name}", '
            f'"{fs.name.overload}").typed<{ret}({", ".join(params)})>()')


def _call(f: NativeFunction, sig: str, names: list[str], ret: str, is_view: bool) -> list[str]:
    """The typed dispatcher handle, then the call below autograd: into
    `_result`, or (`void`) a statement alone.  A view's call runs the next
    key, its ADInplaceOrView kernel (as ATen's VariableType calls views)."""
    n = f.func.name
    lookup = load("op_lookup.cpp").lines(name=f"{f.namespace}::{n.name}", overload=n.overload, signature=sig)
    if ret == "void":
        return lookup + load("op_call_void.cpp").lines(args=", ".join(names))
    guard = "AutoDispatchBelowAutograd" if is_view else "AutoDispatchBelowADInplaceOrView"
    return lookup + load("op_call_result.cpp").lines(args=", ".join(names), guard=guard)


def _body(unit: KernelUnit, info: Optional[DifferentiabilityInfo], params: list[str], ret: str,
          fw: ForwardAD, is_view: bool) -> list[str]:
    f = unit.func
    fs = f.func
    kind = fs.kind()
    names = [a.name for a in fs.schema_order_arguments()]
    call = _call(f, f"{ret}({', '.join(params)})", names, ret, is_view)
    out: list[str] = list(fw.before)

    if kind == OUT or info is None:
        return out + _plain_body(unit, call, ret)

    inplace = kind == INPLACE
    diff = ", ".join(b.name for b in info.args_with_derivatives)
    options = "options" in _names_used(info.all_saved_inputs) and fs.arguments.tensor_options_index is not None
    written = [a for a in fs.schema_order_arguments() if a.is_write and not (inplace and a.name == "self")]
    out += load("op_grad_fn.cpp").lines(
        differentiable=diff, function=info.function,
        inplace_check=load("op_check_inplace.cpp").lines() if inplace else [],
        input_checks=unchecked_input_checks(unit, info) + _written_checks(fs, written),
        options=load("op_tensor_options.cpp").lines() if options else [],
        save=_save(info.all_saved_inputs, is_output=False, inplace=inplace)
        + [f"grad_fn->{b.name}_size_ = {b.name}.size();" for b in info.args_with_derivatives if b.ctype.is_tensor_list])
    out += call + _written_versions(written)
    if inplace:
        out += load("op_inplace_history.cpp").lines(save=_save(info.all_saved_outputs, is_output=True, inplace=True))
        return out + fw.after + ([_return(fs)] if fs.returns else [])

    rnames = [("result" if x == "self" else x) for x in return_names(fs)]
    douts = [o.name for o in differentiable_outputs(info)]
    used = set(douts) | {a.name for a in info.all_saved_outputs} | fw.outputs
    results = [f"auto& {rnames[0]} = _result;"] if len(rnames) == 1 else \
        [f"auto& {r} = std::get<{i}>(_result);" for i, r in enumerate(rnames) if r in used]
    out += load("op_history.cpp").lines(
        results=results, save=_save(info.all_saved_outputs, is_output=True, inplace=False),
        set_history=[f"set_history(flatten_tensor_args({', '.join(douts)}), grad_fn);"] if douts else [])
    return out + fw.after + ([_RETURN_RESULT] if ret != "void" else [])


def unchecked_input_checks(unit: KernelUnit, info: DifferentiabilityInfo) -> list[str]:
    """ATen's check that an input without a formula does not require grad:
    `The function 'mm2' is not differentiable with respect to argument 'b'`."""
    name = unit.func.func.name.name
    return [f'check_no_requires_grad({a}, "{a}", "{name}");' for a in unit.inputs_without_formula()]


def _plain_body(unit: KernelUnit, call: list[str], ret: str) -> list[str]:
    """Not differentiable here.  Without any formula (or for out=), refuse
    inputs that require grad rather than return results silently cut off
    from the graph; an entry marking everything non_differentiable says the
    results simply do not require grad."""
    fs = unit.func.func
    kind = fs.kind()
    args = fs.schema_order_arguments()
    tensor_args = [a.name for a in args if a.type.base() == "Tensor"]
    out: list[str] = []
    if tensor_args and (kind == OUT or unit.info is None):
        what = "functions with out=... arguments don't support automatic differentiation" if kind == OUT \
            else "has no derivative formula"
        out += load("op_refuse_grad.cpp").lines(args=", ".join(tensor_args), op=str(fs.name), what=what)
    out += call + _written_versions([a for a in args if a.is_write])
    return out if ret == "void" else out + [_return(fs)]


def _written(a) -> tuple[str, str]:
    """(whether a written argument was passed, the tensor): a written
    optional tensor (`Tensor(a!)?`) may be None."""
    if str(a.type) == "Tensor?":
        return f"{a.name}.has_value() && {a.name}->defined()", f"(*{a.name})"
    return f"{a.name}.defined()", a.name


def _written_checks(fs, written) -> list[str]:
    """Before the call: a written argument other than an in-place op's
    self gets no history (no formula can give its new value one), so it
    may not require grad; and ATen's checks of a tensor written in place."""
    op = f"{fs.name}"
    return [line for a in written if str(a.type) in ("Tensor", "Tensor?")
            for line in load("op_written_check.cpp").lines(present=_written(a)[0], value=_written(a)[1], op=op,
                                                          name=a.name)]


def _written_versions(written) -> list[str]:
    """After the call: each written tensor's version counter bumped, so that a
    value autograd saved before the write is refused when used (`one of the
    variables needed for gradient computation has been modified by an
    inplace operation`), as for ATen's written arguments."""
    out = []
    for a in written:
        if str(a.type) in ("Tensor", "Tensor?"):
            out += load("op_written_version.cpp").lines(present=_written(a)[0], value=_written(a)[1])
        else:   # a written list: each element
            out += load("op_written_list_version.cpp").lines(name=a.name)
    return out


def _return(fs) -> str:
    """Mutable results are references to the arguments they alias: return
    those, not the (copied) value the call produced."""
    aliased = [next((a.name for a in fs.schema_order_arguments() if r.is_write and a.annotation == r.annotation),
                    None) for r in fs.returns]
    names = [n for n in aliased if n is not None]
    if not fs.returns or len(names) < len(aliased):
        return _RETURN_RESULT
    if len(names) == 1:
        return f"return {names[0]};"
    return f"return std::forward_as_tuple({', '.join(names)});"


def _save(attrs: Sequence[SavedAttribute], *, is_output: bool, inplace: bool) -> list[str]:
    """Statements storing each saved value on `grad_fn`, in member order."""
    out = []
    for a in sorted(attrs, key=lambda a: a.name):
        expr = a.expr
        if a.type.is_tensor:
            var = a.name
            if inplace and is_output:
                expr = "SavedVariable(self, true, self.is_view())"
            elif inplace and var == "self":
                # The op overwrites self; the formula wants its old value.
                expr = "SavedVariable(self.clone(), false)"
            else:
                expr = f"SavedVariable({var}, {'true' if is_output else 'false'})"
            out.append(f"grad_fn->{a.name}_ = {expr};")
            continue
        if a.type.is_tensor_list:
            out.append(f"grad_fn->{a.name}_ = make_saved_variable_list({a.name});")
            continue
        if a.type in _ARRAY_VIEWS:
            expr = f"{expr}.vec()"
        elif a.type == stringViewT:
            expr = f"std::string({expr})"
        elif a.type == OptionalCType(stringViewT):
            expr = f"{expr}.has_value() ? ::std::optional<std::string>(std::string({expr}.value())) : ::std::nullopt"
        out.append(f"grad_fn->{a.name} = {expr};")
    return out


def _names_used(attrs: Sequence[SavedAttribute]) -> set[str]:
    return {a.expr.split(".")[0] for a in attrs}
