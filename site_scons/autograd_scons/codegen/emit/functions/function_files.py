"""Per-op C++ for autograd Functions: one header and one TU per class
(templates/function.h, templates/function.cpp), plus the shared files
(preludes, load check, support TU, umbrella header; codegen/tree.py lists
the tree).  A Function's .cpp includes only its own header, prelude_impl.h
and load_check.h, never the umbrella.

Everything here is a pure function of its arguments: same infos and options,
same bytes.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ...model.autograd import DifferentiabilityInfo
from autograd_scons.base.errors import FormulaError, SpecError
from .backward import backward_body
from ..op_kernels.callers import callee_includes
from ...tree import BANNER, LOAD_CHECK_H, PRELUDE_H, PRELUDE_IMPL_H, UMBRELLA_H, function_file, include
from ...templates import Template, load
from ..lines import INCLUDE, number_back
from .load_check import render_load_check
from ..local_names import check_function_names
from ..options import EmitOptions
from .prelude_headers import render_preludes
from .saved import OPT_TENSOR_LIST, TENSOR, TENSOR_LIST, SavedSlot, saved_slots
from .superclass import superclass
from .support import call, render_support

# libtorch's declarations of its Functions, which a patch's definitions are compiled against.
LIBTORCH_FUNCTIONS_H = "torch/csrc/autograd/generated/Functions.h"
_FUNCTION_H = load("function.h")
_FUNCTION_CPP = load("function.cpp")
_SHOULD_COMPUTE = Template("task_should_compute_output({${name}_ix}),")
_WILL_RELEASE = load("function_will_release.h").lines()


# ------------------------------------------------------------ one op


# Compiled autograd's steps: through support.cpp's instantiation for the
# common types, else torch's template called directly (emit/functions/support.py).
def _unpack(t: str) -> str:
    return call("unpack", t, "packed_args") or f"packed_args.unpack<{t}>()"


def _packed_type(t: str) -> str:
    """A function returning the packed type of `t`, for the schema table."""
    ours = call("packed_type", t, "")
    return "&" + (ours.removesuffix("()") if ours else f"torch::dynamo::autograd::IValuePacker<{t}>::packed_type")


def _pack(t: str, value: str) -> str:
    return call("pack", t, f"packed_args, {value}") or f"packed_args.pack({value})"


def _swap(step: str, s: SavedSlot) -> str:
    return (call(step, s.member_type, f"saved, {s.field}") or f"saved.{step}({s.field})") + ";"


def _collect(s: SavedSlot) -> str:
    if s.kind in (TENSOR, TENSOR_LIST, OPT_TENSOR_LIST):
        flag = "true" if s.is_output else "false"
        wrapped = call("collect_saved", s.member_type, f"args, {s.field}, {flag}")
    else:
        wrapped = call("collect", s.member_type, f"args, {s.field}")
    return wrapped + ";" if wrapped else s.collect


class _Op:
    """What both files of one Function are built from."""

    def __init__(self, info: DifferentiabilityInfo):
        self.info = info
        self.op = info.function
        self.superclass = superclass(info)
        try:
            self.slots: list[SavedSlot] = saved_slots(info.all_saved_inputs, info.all_saved_outputs)
        except FormulaError as e:
            raise SpecError(str(e), info.file or None, info.line or None, str(info.func.func)) from None
        check_function_names(info, [s.name for s in self.slots])
        args = info.args_with_derivatives
        self.n = len(args)
        # List inputs get one slot per element; the count is saved at forward.
        self.sized = [b.name for b in args if b.ctype.is_tensor_list]
        self.ranges = [f"auto {b.name}_ix = gen.range({b.name + '_size_' if b.name in self.sized else 1});"
                       for b in args]
        self.retain = info.uses_retain_variables
        # apply_functional parameters: (type without &, name, by reference)
        self.params: list[tuple[str, str, bool]] = (
            [("size_t", f"{n}_size_", False) for n in self.sized]
            + [(s.param_type, s.name, True) for s in self.slots]
            + ([("bool", "retain_variables", False)] if self.retain else []))
        self.call_args = ([f"{n}_size_" for n in self.sized] + [s.arg for s in self.slots]
                          + (["retain_variables"] if self.retain else []))

    @property
    def source(self) -> str:
        i = self.info
        key = "" if i.dispatch_key == "Default" else f" [{i.dispatch_key}]"
        return f"// Autograd Function for {i.func.func}{key}"

    # -- header ------------------------------------------------------------

    def header(self, ns: str) -> str:
        op = self.op
        release = [line for s in self.slots for line in s.release]
        if release:
            release.insert(0, "std::lock_guard<std::mutex> lock(mutex_);")
        members = [f"{t} {n}{'' if v is None else ' = ' + v};" for t, n, v in self.members()]
        return _FUNCTION_H.substitute(
            banner=BANNER, description=self.source, ns=ns, op=op, superclass=self.superclass,
            prelude_h=include(function_file(op, ".h"), PRELUDE_H),
            saved_includes=sorted({h for s in self.slots for h in s.includes}),
            release=release, members=members,
            # The formula may consume saved outputs when the graph is freed.
            will_release=_WILL_RELEASE if self.retain else [])

    def members(self) -> list[tuple[str, str, Optional[str]]]:
        """The class's data members: (type, name, default or None), in order."""
        members = [m for s in self.slots for m in s.members]
        members += [("size_t", f"{n}_size_", "0") for n in self.sized]
        if self.retain:
            members.insert(0, ("bool", "retain_variables", "true"))
        return members

    # -- definitions -------------------------------------------------------

    def _unpacks(self) -> list[str]:
        return [s.check for s in self.slots if s.check] + [s.unpack for s in self.slots if s.unpack]

    def definitions(self, ns: str, patch: bool = False, callees: Sequence[str] = ()) -> str:
        op, here = self.op, function_file(self.op, ".cpp")
        mask = f"std::array<bool, {self.n}>"
        # A patch defines the members of libtorch's own class, as declared there.
        class_header = f"<{LIBTORCH_FUNCTIONS_H}>" if patch else f'"{include(here, function_file(op, ".h"))}"'
        return number_back(_FUNCTION_CPP.substitute(
            banner=BANNER, description=self.source, ns=ns, op=op, n=str(self.n), derivative_lines=INCLUDE,
            class_header=class_header,
            prelude_impl_h=include(here, PRELUDE_IMPL_H), load_check_h=include(here, LOAD_CHECK_H),
            callee_headers=callee_includes(here, callees),
            params="".join(f",\n    {t}{'&' if ref else ''} {n}" for t, n, ref in self.params),
            args="".join(", " + a for a in self.call_args),
            ranges=self.ranges, backward=backward_body(self.info),
            unpack_mask=_unpack(mask), unpack_args=[f"auto {n} = {_unpack(t)};" for t, n, _ in self.params],
            lock=["std::lock_guard<std::mutex> lock(mutex_);"] if any(s.release for s in self.slots) else [],
            # which inputs the engine wants gradients for (apply-side)
            unpacks=self._unpacks(),
            should_compute=[_SHOULD_COMPUTE.substitute(name=b.name) for b in self.info.args_with_derivatives],
            collect=[_collect(s) for s in self.slots],
            before=[_swap("before", s) for s in self.slots], after=[_swap("after", s) for s in self.slots],
            packed_types=[f"{_packed_type(t)}," for t in [mask] + [t for t, _, _ in self.params]],
            pack=[f"{_pack(mask, 'needs_input_grad')};"]
            + [f"{_pack(t, a)};" for (t, _, _), a in zip(self.params, self.call_args)]), f"../{here}")


def class_layout(info: DifferentiabilityInfo) -> tuple[str, list[tuple[str, str]]]:
    """(base class, [(member type, name)]) of the Function class of `info`:
    what a patch must find libtorch's class declare (codegen/engine/patch_selection.py)."""
    o = _Op(info)
    return o.superclass, [(t, n) for t, n, _ in o.members()]


def render_op(info: DifferentiabilityInfo, opts: EmitOptions, callees: Sequence[str] = (),
              own_class: bool = False) -> dict[str, str]:
    """`functions/<Op>.h` and `functions/<Op>.cpp` for one info with an op;
    `callees`: the stems of the extension ops its formulas call (emit/op_kernels/callers.py).
    In a patch, the class is libtorch's (its members defined), or with
    `own_class` the patch's own, in a namespace of its own (aten_kernels/aten_kernel.py)."""
    if not info.op:
        raise ValueError(f"info for '{info.func.func}' has no op: nothing is differentiable")
    o = _Op(info)
    if opts.patch and own_class:
        from ...model.aten_op import OWN_NAMESPACE
        return {function_file(o.op, ".h"): o.header(OWN_NAMESPACE),
                function_file(o.op, ".cpp"): o.definitions(OWN_NAMESPACE, callees=callees)}
    if opts.patch:  # the class is libtorch's: its header is libtorch's
        return {function_file(o.op, ".cpp"): o.definitions(opts.ns, patch=True)}
    return {function_file(o.op, ".h"): o.header(opts.ns),
            function_file(o.op, ".cpp"): o.definitions(opts.ns, callees=callees)}


# -------------------------------------------------------------- shared


def render_shared(ops: Sequence[str], opts: EmitOptions) -> dict[str, str]:
    """The preludes and the umbrella `Functions.h` (the unity buckets are the
    compile layout's: see buckets.py)."""
    files = render_preludes(opts)
    files.update(render_load_check(opts))
    files.update(render_support(opts))
    if opts.patch:  # no classes of ours to gather
        return files
    files[UMBRELLA_H] = load("umbrella.h").substitute(
        banner=BANNER, prelude_h=PRELUDE_H,
        function_headers=[f'#include "{function_file(op, ".h")}"' for op in sorted(ops)])
    return files
