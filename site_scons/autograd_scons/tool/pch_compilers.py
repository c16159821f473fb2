"""The precompiled prelude's rules, without SCons: how each compiler
precompiles it and takes it, and what the shared one holds and is keyed by
(tool/pch.py builds it; the build environment chooses its folder:
buildenv/prelude_folders.py).

Compilers.  GCC writes `<header>.gch`, which `-include <header>` finds;
`-Winvalid-pch` says when it is refused.  clang writes `<header>.pch`,
taken by `-include-pch`, and is given `-fpch-instantiate-templates`: the
templates the prelude's own code instantiates are then instantiated once,
in the precompile, where GCC instantiates them again in every TU (94% of
an empty TU against GCC's prelude; docs/compile-layout.md).  The family is
read off the compiler's name, as `PCH=auto` always did: no compiler is run
to learn it.

The shared prelude.  What is precompiled is torch's headers only (the
fixed includes of prelude.h and prelude_impl.h, and the formula helpers
the caller names among torch's own headers): nothing of an extension (its
namespace, its helper headers, the formula built-ins) is in it, and it is
compiled with the extension's flags less its include paths (`-I`: torch's
come as `-isystem` flags) and `TORCH_EXTENSION_NAME` (a define the prelude
never reads; both compilers accept a TU defining more macros than its
precompiled header).  So every extension built with the same torch,
compiler and flags takes the same file: `<folder>/<key>/torch_prelude.h`
and its `.gch`/`.pch`, where `folder` is `$AUTOGRAD_PRELUDE_DIR` (the build
environment sets it: `$AUTOGRAD_EXTENSIONS_DIR/_prelude`), the key a digest
of the text, the command line, the compiler's path and stat, and
`$AUTOGRAD_PCH_KEY` (torch's stamp).  The folders are private (0700, ours,
no links: private_folder.py); the file is built under the key folder's own
lock, written to a temporary name and renamed, so a present file is a
whole one, and a build that finds it compiles nothing.
"""

from __future__ import annotations

import json
import os
import shlex

from autograd_scons.codegen.engine.keys import digest
from autograd_scons.codegen.engine.writer import stat_of

GCC, CLANG = "gcc", "clang"
SHARED_HEADER = "torch_prelude.h"
# The prelude's includes that are torch's (and the standard library's): the
# same text for every extension (templates/prelude.h, prelude_impl.h).
_TORCH_INCLUDES = (
    "torch/csrc/autograd/function.h", "torch/csrc/autograd/saved_variable.h",
    "ATen/ATen.h", "ATen/core/List.h", "ATen/core/functional.h", "c10/util/irange.h",
    "torch/csrc/dynamo/compiled_autograd.h",
)
_STD = ("algorithm", "array", "cstdint", "mutex", "optional", "string", "tuple", "vector")
_TORCH_ROOTS = ("torch/", "ATen/", "c10/")
EXTENSION_DEFINE = "TORCH_EXTENSION_NAME"


def family(cxx: str) -> str:
    """GCC or clang, from the compiler's name (`$CXX`, words allowed)."""
    words = shlex.split(cxx) if cxx else []
    return CLANG if words and "clang" in os.path.basename(words[0]) else GCC


def suffix(fam: str) -> str:
    return ".pch" if fam == CLANG else ".gch"


def precompile_flags(fam: str) -> list[str]:
    """Flags of the precompile only (after `-x c++-header`)."""
    return ["-fpch-instantiate-templates"] if fam == CLANG else []


def use_flags(fam: str, header: str) -> list[str]:
    """Flags of a TU taking the precompiled `header`."""
    if fam == CLANG:
        return ["-include-pch", header + suffix(fam)]
    return ["-Winvalid-pch", "-include", header]


def torch_helpers(includes) -> list[str]:
    """The caller's formula helpers that are torch's own headers (e.g.
    FunctionsManual.h for torch's specs): precompiled with the rest."""
    return [h.strip('<>"') for h in includes if h.strip('<>"').startswith(_TORCH_ROOTS)]


def shared_text(banner: str, includes=()) -> str:
    # No `#pragma once`: the file is only ever precompiled as a main file
    # (both compilers warn about it there) and taken with -include.
    lines = [banner, "// torch's headers, precompiled once per torch, compiler and flags (tool/pch_compilers.py).", ""]
    lines += [f"#include <{h}>" for h in _TORCH_INCLUDES + tuple(torch_helpers(includes))]
    lines += [f"#include <{h}>" for h in _STD]
    return "\n".join(lines) + "\n"


def without_extension_define(defines):
    """CPPDEFINES less TORCH_EXTENSION_NAME (SCons's string, dict, or
    sequence forms: a list, or the deque SCons 4.5 keeps)."""
    if isinstance(defines, dict):
        return {k: v for k, v in defines.items() if k != EXTENSION_DEFINE}
    if not isinstance(defines, (str, bytes)) and hasattr(defines, "__iter__"):
        out = []
        for d in defines:
            name = d[0] if isinstance(d, (list, tuple)) and d else d
            if not (isinstance(name, str) and name.split("=")[0] == EXTENSION_DEFINE):
                out.append(d)
        return out
    return defines


def key(text: str, command: str, compiler: str, torch_key: str) -> str:
    """The shared prelude's folder name: what it is built from, content only."""
    return digest(json.dumps([text, command, compiler, stat_of(compiler) if compiler else None,
                              torch_key]).encode())[:24]
