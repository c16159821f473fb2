"""Kernels that native_functions.yaml declares (`dispatch:`) and no object
defines, found before anything is loaded: the linked library's undefined
symbols (`nm -DC --undefined-only`) in an op's `<ns>::native` namespace,
each named with the yaml line that declares it, the C++ signature and the
namespace the definition must be in.  Without this check such a library
links (a shared library may leave symbols undefined) and fails only at
dlopen with `undefined symbol: _ZN...`.

The kernels declared are the model's (model/extension_op.py,
DeclaredKernel), as the generator's update returns them: the specs are
not parsed again for the check.  The SCons tool runs nm and passes its
lines here."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Iterable, Optional

from ..model.extension_op import DeclaredKernel

_DEMANGLED = re.compile(r"^\s*U\s+(?P<name>[\w:]+)\((?P<params>.*)\)\s*$")


def undefined_symbols(library: str) -> Optional[list[str]]:
    """`nm -DC --undefined-only` lines of `library`, or None where nm is
    missing or cannot read it (then nothing is checked)."""
    nm = shutil.which("nm")
    if nm is None:
        return None
    p = subprocess.run([nm, "-DC", "--undefined-only", library], capture_output=True, text=True)
    return p.stdout.splitlines() if p.returncode == 0 else None


def missing_kernels(declared: Iterable[DeclaredKernel], nm_lines: Iterable[str]) -> list[str]:
    """One located message per declared kernel the library leaves undefined."""
    undefined: dict = {}
    for line in nm_lines:
        m = _DEMANGLED.match(line)
        if m and "::native::" in m["name"]:
            undefined.setdefault(m["name"], m["params"])
    out = []
    for k in declared:
        if k.symbol in undefined:
            undefined.pop(k.symbol)
            ns = f"{k.namespace}::native"
            out.append(f"{k.file}:{k.line}: entry '{k.op}': the {k.key} kernel '{k.name}' is declared here but "
                       f"no object defines it: define `{k.ret} {ns}::{k.name}({', '.join(k.params)})` "
                       f"(in namespace {ns})")
    return out
