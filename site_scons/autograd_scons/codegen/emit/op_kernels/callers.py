"""Callers of an extension's own ops through the dispatcher.

ATen's formulas and kernels call other ops as `at::foo(...)`, which goes
through the dispatcher: the Autograd kernel when gradients are recorded,
then the backend's (CPU, CUDA, or Meta for fake tensors under
torch.compile).  For an extension op `<ns>::<name>.<overload>` the op's
header `ops/<stem>.h` declares the same kind of function,
`<ns>::<caller>(...)` with the dispatcher's C++ signature, where `<caller>`
is the op's C++ name without its namespace (`scale_out` for `scale.out`);
the op's own TU `ops/<stem>.cpp` defines it.  Calling the hand-written
kernel `<ns>::native::...` directly would skip the dispatcher (Meta, fake
tensors, torch.compile need it).

A Function or Autograd kernel whose formulas call `<ns>::<caller>(` includes
that op's header (its unit's `callees`, parse/extension_ops.py): only
those, so that adding an op recompiles nothing else.  The headers it includes are part of its unit's key (the
engine's units.py), so a formula that starts or stops calling an op, or an
op that appears or goes, regenerates exactly the units that name it.
"""

from __future__ import annotations

from typing import Sequence

from ...model.extension_op import caller_name
from ...templates import load
from ...tree import include, op_file


def callee_includes(source: str, stems: Sequence[str]) -> list[str]:
    """`#include` lines of the callees' headers, from `source`."""
    return [f'#include "{include(source, op_file(stem, ".h"))}"' for stem in stems]


def _params(types: Sequence[str], names: Sequence[str]) -> str:
    return ", ".join(f"{t} {n}" for t, n in zip(types, names))


def caller_declaration(unit, classes_ns: str, ret: str, types: Sequence[str]) -> list[str]:
    """The header's declaration of `unit`'s caller (none for an op without one)."""
    f = unit.func
    name = caller_name(f.namespace, unit.stem, classes_ns)
    if name is None:
        return []
    names = [a.name for a in f.func.schema_order_arguments()]
    return load("op_caller.h").lines(op_ns=f.namespace, op=f"{f.namespace}::{f.func.name}", ret=ret, name=name,
                                     params=_params(types, names), definition=unit.path) + [""]


def caller_definition(unit, classes_ns: str, ret: str, types: Sequence[str]) -> list[str]:
    """The op TU's definition of `unit`'s caller, through a typed handle
    looked up once (a function of the classes' namespace, called qualified:
    no argument name can hide it)."""
    f = unit.func
    name = caller_name(f.namespace, unit.stem, classes_ns)
    if name is None:
        return []
    n = f.func.name
    names = [a.name for a in f.func.schema_order_arguments()]
    return load("op_caller.cpp").lines(
        ns=classes_ns, op_ns=f.namespace, op=f"{f.namespace}::{n}", stem=unit.stem, ret=ret, name=name,
        signature=f"{ret}({', '.join(types)})", qualified=f"{f.namespace}::{n.name}", overload=n.overload,
        params=_params(types, names), args=", ".join(names)) + [""]
