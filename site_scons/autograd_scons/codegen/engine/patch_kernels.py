"""Which of ATen's ops a patch gives an Autograd kernel of its own
(emit/aten_kernels/aten_kernel.py), registered over libtorch's, and why the others
keep libtorch's (docs/patching-torch.md).

An op gets one when a Function it creates is the patch's own class (an
edit that changes what a Function saves, a new entry: libtorch's kernel
would fill libtorch's class), and with `--kernels` whenever it can: then
torch's ops run through the tool's kernels and Functions alone.  Each op is
paired with an entry as torch's build pairs it: its own, else its
functional variant's (an in-place op reusing its functional's formulas).

    ops = aten_ops(loaded.native, loaded.infos)         # [(NativeFunction, info, exact)]
    why = not_generated(f, info)                            # None, or the reason
"""

from __future__ import annotations

from typing import Optional

from ..model.aten_op import LIBTORCH_FUNCTIONS_H, OWN_NAMESPACE, AtenKernel
from ..model.autograd import DifferentiabilityInfo
from ..model.native import NativeFunction, NativeSpec
from ..model.schema import FUNCTIONAL, INPLACE, OUT
from .units import Kind, LoadedSpecs, Unit

# The ops whose Autograd kernel is hand-written in libtorch (its
# VariableTypeManual.cpp, not generated from the specs): replacing one with
# a generated kernel would change what it does.
HAND_WRITTEN = frozenset({"copy_", "resize_", "resize_as_", "detach", "detach_", "_fw_primal", "_make_dual",
                          "requires_grad_", "retain_grad", "_backward", "set_data", "data", "is_leaf",
                          "output_nr", "_version"})

# Why an op keeps libtorch's kernel (the report's keys).
OUT_VARIANT = "an out= op (libtorch's kernel only refuses inputs that require grad)"
FOREACH = "a _foreach_ op (its kernel makes one Function per element: not generated)"
MANUAL = "libtorch's kernel is hand-written (VariableTypeManual.cpp)"
NOTHING_DIFFERENTIABLE = "its entry differentiates nothing"
NO_ENTRY = "no derivatives entry"
UNSUPPORTED = "not supported by the kernel generator"
NOT_NAMED = "its Function is not among those named (only=)"


def aten_ops(native: NativeSpec, all_infos: list[DifferentiabilityInfo]) -> list:
    """(NativeFunction, Default-key info or None, exact) of every ATen op
    that libtorch gives an Autograd kernel, in the specs' order, from the
    update's parsed specs (engine/units.py: LoadedSpecs)."""
    infos = [i for i in all_infos if i.dispatch_key == "Default"]
    exact = {str(i.func.func): i for i in infos}
    functional = {i.func.func.signature_key: i for i in infos if i.func.func.kind() == FUNCTIONAL}
    out: list[tuple[NativeFunction, Optional[DifferentiabilityInfo], bool]] = []
    for f in native.functions:
        if f.namespace != "aten" or f.has_composite_implicit_autograd_kernel:
            continue   # (no Autograd kernel in libtorch: differentiated through what it calls)
        info = exact.get(str(f.func))
        if info is not None:
            out.append((f, info, True))
            continue
        if "generated" in f.tags and f.func.kind() == OUT:
            continue
        twin = None if f.func.name.base.startswith("_foreach") else functional.get(f.func.signature_key)
        out.append((f, twin, False))
    return out


def not_generated(f, info) -> Optional[str]:
    """Why `f` keeps libtorch's Autograd kernel, or None."""
    name = f.func.name
    if name.base.startswith("_foreach"):
        return FOREACH
    if info is None:
        return NO_ENTRY
    if f.func.kind() == OUT:
        return OUT_VARIANT
    if name.name in HAND_WRITTEN or name.base in HAND_WRITTEN:
        return MANUAL
    if not info.op:
        return NOTHING_DIFFERENTIABLE
    if f.func.kind() not in (FUNCTIONAL, INPLACE):
        return f"{UNSUPPORTED}: a {f.func.kind()} op"
    return None


def kernel_unit(f, info, exact: bool, own: bool, complex_ops: frozenset) -> Unit:
    """The unit of `f`'s kernel, creating libtorch's class of `info` or (`own`) the patch's."""
    cls = f"{OWN_NAMESPACE}::{info.op}" if own else f"torch::autograd::generated::{info.op}"
    header = f'"../functions/{info.op}.h"' if own else LIBTORCH_FUNCTIONS_H
    k = AtenKernel(f, info, exact, cls, header, f.func.name.base in complex_ops)
    return Unit(Kind.KERNEL, k.op, k.stem, k)


DERIVED_FOREACH = ("derived for a _foreach_ op from an entry whose edit changes what it saves (the patch "
                   "generates no _foreach_ kernel: libtorch's Function and kernel stay)")


def add_kernels(out, own: list, target, specs: Optional[LoadedSpecs], classes: dict) -> None:
    """Add to the selection `out` the patch's own classes of `own` ((unit,
    why libtorch's class will not do) of the edited Functions), the kernels
    creating them, and with `target.kernels` every other kernel that can be
    generated (of the ops creating a Function `target.only` names, when it
    names any); each op left with libtorch's kernel counted by reason."""
    from autograd_scons.base.errors import SpecError
    if specs is None or not target.complex_ops:
        raise SpecError("the patch's Autograd kernels need torch's specs and its list of the ops it "
                        "differentiates for complex outputs", target.functions_h)
    complex_ops = frozenset(target.complex_ops)
    ops = aten_ops(specs.native, specs.infos)
    by_function: dict = {}
    for f, info, exact in ops:
        if info is not None and info.op:
            by_function.setdefault(info.op, []).append((f, info, exact))
    kernels, own_names = [], set()
    for u, message in own:
        if not u.bound:   # (a Function torch derives for a _foreach_ op: its kernel loops per element)
            out.left_out.setdefault(DERIVED_FOREACH, []).append(u.name)
            continue
        mine = by_function.get(u.name, [])
        refused = [(f, why) for f, info, _ in mine if (why := not_generated(f, info)) not in (None, OUT_VARIANT)]
        if not mine or refused:
            what = (f"its op {refused[0][0].func.name} keeps libtorch's Autograd kernel ({refused[0][1]})"
                    if refused else "no ATen op with a kernel creates it")
            raise SpecError(f"{message.split('; ')[0]}: the patch would need its own class and kernels, but "
                            f"{what}; this edit needs PyTorch rebuilt", *u.where())
        own_names.add(u.name)
        out.own.append(u.name)
        out.edited.append(u.name)
        out.units.append(u)
        kernels += [kernel_unit(f, info, exact, True, complex_ops) for f, info, exact in mine
                    if not_generated(f, info) is None]
    if target.kernels:
        named = frozenset(target.only)
        for f, info, exact in ops:
            if info is not None and info.op in own_names:
                continue
            why = not_generated(f, info)
            if why is None and info.op not in classes:
                why = "its Function is not a class of libtorch's"
            if why is None and named and info.op not in named:
                why = NOT_NAMED
            if why is not None:
                out.kernels_left_out.setdefault(why, []).append(f"aten::{f.func.name}")
                continue
            kernels.append(kernel_unit(f, info, exact, False, complex_ops))
    out.units += kernels
    out.kernels = [k.name for k in kernels]
