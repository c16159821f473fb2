"""What an extension op's `autocast:` and `vmap:` add to its TU (emit/op_kernels/autocast.py,
emit/op_kernels/vmap.py): one block after the op's other kernels, with the headers it
needs, and the (dispatch key, kernel) pairs the op's registration adds."""

from __future__ import annotations

from ...templates import load
from .autocast import autocast_kernels
from .vmap import vmap_kernels


def transform_kernels(unit, ns: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(the block's lines, or none; its registrations)."""
    f = unit.func
    if f.autocast is None and f.vmap is None:
        return [], []
    includes: list[str] = []
    kernels: list[str] = []
    impls: list[tuple[str, str]] = []
    for declared, emit, headers in ((f.autocast, autocast_kernels, "autocast_includes.cpp"),
                                    (f.vmap, vmap_kernels, "vmap_includes.cpp")):
        if declared is None:
            continue
        lines, pairs = emit(unit, declared)
        includes += load(headers).lines()
        kernels += ([""] if kernels else []) + lines
        impls += pairs
    return [""] + load("transforms.cpp").lines(includes=includes, ns=ns, kernels=kernels), impls
