"""The last step of parsing: the specs' infos and native functions paired
into what the generator writes a file for, every check that needs both
files made and located here, before anything is emitted.

- `function_infos`: the infos that become Function classes, in emission order;
- `kernel_units`: an extension's ops (any namespace but aten), each with the
  info that differentiates it (model/extension_op.py, KernelUnit);
- `caller_table` and `callees`: which extension ops a formula calls through
  the dispatcher (`<ns>::<caller>(...)`, emit/op_kernels/callers.py), whose headers its
  unit then includes.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from autograd_scons.base.errors import SpecError
from ..model.autograd import DifferentiabilityInfo, uses_ident, written_as
from ..model.extension_op import KernelUnit
from ..model.native import NativeSpec
from ..model.schema import FUNCTIONAL, INPLACE, OUT
from .extension_keys import view_declaration

# `ns::name(`, not preceded by another `::` part (`ns::native::k(` is the kernel)
_CALL = re.compile(r"(?<![\w:])(?:::)?([A-Za-z_]\w*)::([A-Za-z_]\w*)\s*\(")


def function_infos(infos: Iterable[DifferentiabilityInfo],
                   foreach_infos: Iterable[DifferentiabilityInfo] = ()) -> list[DifferentiabilityInfo]:
    """The infos that become classes, in emission order: those of `infos`
    with an op (load order), then `foreach_infos` (from
    `derive_foreach_infos`; passing them inside `infos` works as well).
    File-name clashes are checked over every unit: engine/units.py."""
    return [i for i in infos if i.op] + [i for i in foreach_infos if i.op]


def kernel_units(native: NativeSpec, infos: Sequence[DifferentiabilityInfo], *,
                 formulas: bool = True) -> list[KernelUnit]:
    """Every non-ATen native function, paired with the Default-key info of its
    own entry, or for an in-place variant with that of its functional twin.
    Without `formulas` (the `signatures` command reads native_functions.yaml
    alone) the checks against the derivatives entries are not made."""
    by_func = {str(i.func.func): i for i in infos if i.dispatch_key == "Default"}
    by_sig = {i.func.func.signature_key: i for i in by_func.values() if i.func.func.kind() == FUNCTIONAL}
    copies = {id(g.view_copy): g.view for g in native.view_groups if g.view_copy is not None and g.view_copy.generated}
    units = []
    for f in native.functions:
        if f.namespace == "aten" or (f.generated and id(f) not in copies):
            continue
        info = by_func.get(str(f.func))
        if info is None and f.func.kind() == INPLACE:
            info = by_sig.get(f.func.signature_key)
        units.append(KernelUnit(f, info, copy_of=copies.get(id(f))))
    # torch.library takes `myadd_out` beside `myadd.out`: the overload's
    # names move aside (a collision left after that is units.py's error).
    plain = {u.stem.lower() for u in units if not u.func.func.name.overload}
    units = [KernelUnit(u.func, u.info, "__", u.copy_of) if u.func.func.name.overload and u.stem.lower() in plain
             else u for u in units]
    if formulas:
        for u in units:
            _check_against_entry(u)
    return units


def _check_against_entry(unit: KernelUnit) -> None:
    """What an op's `dispatch:` and `view:` ask of its derivatives entry."""
    f, info = unit.func, unit.info
    if f.dispatch is not None and f.dispatch.implicit and info is not None and info.op:
        raise SpecError(f"a CompositeImplicitAutograd op is differentiated through the ops its kernel calls, but "
                        f"derivatives.yaml has an entry for it (line {info.line}): remove one of them",
                        f.file, f.dispatch.line, f"{f.namespace}::{f.func}")
    if info is not None and info.op:
        _check_written(unit)
    if f.view is None:
        if not f.generated:   # (a view op's kernels need its view declared: says what to write)
            view_declaration(f.file, lambda key: f.line, f.namespace, f.func, f.returns_view, f.dispatch, None,
                             required=True)
        return
    if info is None:
        raise SpecError("a view op needs a derivatives entry: its backward formula (as every ATen view has), and "
                        "'result: auto_linear' for forward AD", f.file, f.line, f"{f.namespace}::{f.func}")
    for fd in info.forward_derivatives:
        if written_as(fd, info) != "auto_linear":
            raise SpecError(f"the forward formula of a view must be 'auto_linear' (the same view of the base's "
                            f"tangent, which autograd requires of a view's tangent), not "
                            f"'{', '.join(fd.var_names)}: {written_as(fd, info)}'",
                            info.file or None, fd.line or info.line or None, str(info.func.func))


def _check_written(unit: KernelUnit) -> None:
    """An argument the op writes (`Tensor(a!)`, `Tensor(a!)?`; not an
    in-place op's self, nor an out= argument) gets no history: its new value
    has no formula, and a value of it saved for the backward would be stale
    once the op wrote it (autograd refuses it then).  So no formula may be
    for it or read it."""
    f, info = unit.func, unit.info
    assert info is not None
    fs = f.func
    if fs.kind() == OUT:
        return
    for a in fs.schema_order_arguments():
        if not a.is_write or (fs.kind() == INPLACE and a.name == "self"):
            continue
        spelled = f"{a.type}".replace("Tensor", "Tensor(" + "|".join(a.annotation.alias_set) + "!)", 1) \
            if a.annotation else str(a.type)
        for d in info.derivatives:
            if a.name in d.var_names:
                raise SpecError(f"formula for '{a.name}': argument '{a.name}' is written by the op ('{spelled}'), "
                                "and a written argument gets no gradient: its new value has no formula; drop this "
                                "formula, or declare the argument without '!' if the op only reads it",
                                info.file or None, d.line or info.line or None, str(info.func.func))
        formulas = [(d.formula, d.line) for d in info.derivatives] + \
            [(fd.formula, fd.line) for fd in info.forward_derivatives]
        for text, line in formulas:
            if any(uses_ident(text, n) for n in (a.name, f"{a.name}_p", f"{a.name}_t")):
                raise SpecError(f"a formula uses '{a.name}', which the op writes ('{spelled}'): the value saved "
                                "before the call would be stale once the op wrote it (autograd would raise 'one of "
                                "the variables needed for gradient computation has been modified by an inplace "
                                "operation' at backward); compute what the formula needs from the inputs",
                                info.file or None, line or info.line or None, str(info.func.func))


def caller_table(units: Iterable[KernelUnit]) -> dict[tuple[str, str], str]:
    """(namespace, caller name) -> stem, for every extension op."""
    return {(k.func.namespace, k.stem[len(k.func.namespace) + 1:]): k.stem for k in units}


def callees(formulas: Iterable[str], table: dict[tuple[str, str], str]) -> tuple[str, ...]:
    """The stems of the extension ops `formulas` call, sorted."""
    found = {table[(m[1], m[2])] for text in formulas for m in _CALL.finditer(text) if (m[1], m[2]) in table}
    return tuple(sorted(found))
