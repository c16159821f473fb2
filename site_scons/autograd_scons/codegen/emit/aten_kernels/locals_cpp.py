"""`libtorch_locals.cpp` of a patch of libtorch's Functions: a definition,
in the patch, of each of libtorch's local definitions its objects use,
reaching libtorch's own (templates/libtorch_locals.cpp; what is reached and
why: site_scons/autograd_scons/torch_patch/libtorch_locals.py, which
calls this once the objects are compiled).

    text = render_locals([(mangled, qualified, offset, size, is_data), ...], anchor, build_id)
"""

from __future__ import annotations

from typing import Sequence

from ...templates import load, string_literal
from ...tree import BANNER

# The header declaring the local data formulas use (for the size check).
_MANUAL_H = "#include <torch/csrc/autograd/FunctionsManual.h>"


def render_locals(reached: Sequence[tuple[str, str, int, int, bool]], anchor: tuple[str, int],
                  build_id: str) -> str:
    """The TU for `reached`, sorted by mangled name; `anchor`: (mangled,
    offset) of a function libtorch exports; `build_id`: libtorch's, hex."""
    if not reached:
        return load("libtorch_locals_none.cpp").substitute(banner=BANNER)
    functions = [r for r in reached if not r[4]]
    data = [r for r in reached if r[4]]
    jumps: list[str] = []
    for slot, (mangled, qualified, _, _, _) in enumerate(functions):
        jumps += load("libtorch_local_function.cpp").lines(qualified=qualified, symbol=mangled,
                                                           slot_offset=str(8 * slot))
    copies: list[str] = []
    for i, (mangled, qualified, _, size, _) in enumerate(data):
        copies += load("libtorch_local_data.cpp").lines(qualified="::" + qualified, symbol=mangled, size=str(size),
                                                        alias=f"autograd_scons_libtorch_data_{i}")
    return load("libtorch_locals.cpp").substitute(
        banner=BANNER, declarations=[_MANUAL_H] if data else [],
        function_count=str(len(functions)),
        function_offsets=[f"{hex(offset)},  // {qualified}" for _, qualified, offset, _, _ in functions],
        data_count=str(len(data)), data_copies=copies,
        data=[line for i, (_, qualified, offset, size, _) in enumerate(data)
              for line in load("libtorch_local_data_entry.cpp").lines(
                  offset=hex(offset), size=str(size), alias=f"autograd_scons_libtorch_data_{i}", qualified=qualified)],
        build_id=", ".join(f"0x{build_id[i:i + 2]}" for i in range(0, len(build_id), 2)),
        anchor=string_literal(anchor[0])[1:-1], anchor_offset=hex(anchor[1]), functions=jumps)
