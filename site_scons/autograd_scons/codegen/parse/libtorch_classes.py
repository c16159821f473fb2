"""libtorch's own autograd Function classes, read from the C++ of its
installed `torch/csrc/autograd/generated/Functions.h` (or of any text in
that shape, ours included): each class's base, data members and methods.

A patch of libtorch's Functions (codegen/engine/patch_selection.py) must define members of
exactly these classes: libtorch's autograd kernels construct them and fill
their members, so the layout is theirs and not the specs'.

    classes = read_classes(text)     # {"MulBackward0": LibtorchClass(...)}
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STRUCT_RE = re.compile(r"^struct (?:TORCH_API )?(\w+) : public (\w+) \{$")
# Spellings of one type that differ only by how much of its namespace they name.
_NAMESPACES = ("torch::autograd::generated::", "torch::autograd::", "::std::", "std::", "at::", "c10::",
               "torch::")


def normalise_type(t: str) -> str:
    """Namespace spelling and spacing aside, the same C++ type."""
    t = " ".join(t.split())
    for ns in _NAMESPACES:
        t = t.replace(ns, "")
    return t


@dataclass(frozen=True)
class LibtorchClass:
    name: str
    base: str
    members: tuple[tuple[str, str], ...]   # (normalised type, name) in order
    release: tuple[str, ...]                # statements of release_variables()
    methods: frozenset[str]                 # names of the methods declared


def read_classes(text: str) -> dict[str, LibtorchClass]:
    """Every `struct X : public Base {...};` at the start of a line, in the
    order of the text; libtorch's Windows-only branch (`#ifdef _WIN32`) is
    passed over for the declaration after its `#else`."""
    out: dict[str, LibtorchClass] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _STRUCT_RE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j] != "};":
            j += 1
        body = lines[i + 1:j]
        if "#else" in body:
            i += 2 + body.index("#else")
            continue
        out[m.group(1)] = _class(m.group(1), m.group(2), body)
        i = j + 1
    return out


def _class(name: str, base: str, body: list[str]) -> LibtorchClass:
    members, release, methods = [], [], set()
    depth, in_release = 0, False
    for raw in body:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if depth == 0:
            mm = re.match(r".*?(\w+)\(", line)
            if mm and not line.startswith("using"):
                methods.add(mm.group(1))
                in_release = mm.group(1) == "release_variables"
            elif line.endswith(";") and not line.startswith("using"):
                decl = line[:-1].split(" = ")[0]
                t, _, n = decl.rpartition(" ")
                members.append((normalise_type(t), n))
        elif in_release and depth == 1 and line != "}":
            release.append(line)
        depth += line.count("{") - line.count("}")
    return LibtorchClass(name, base, tuple(members), tuple(release), frozenset(methods))
