"""Kernels that native_functions.yaml declares (`dispatch:`) and no object
defines, found before anything is loaded: the linked library's undefined
symbols (`nm -DC --undefined-only`) in an op's `<ns>::native` namespace,
each named with the yaml line that declares it, the C++ signature and the
namespace the definition must be in.  Without this check such a library
links (a shared library may leave symbols undefined) and fails only at
dlopen with `undefined symbol: _ZN...`.

Pure: the SCons tool runs nm and passes its lines here."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Iterable, Optional

from ..emit.dispatch import dispatch_of, key_line
from ..emit.kernels import KernelUnit, signature_of

_DEMANGLED = re.compile(r"^\s*U\s+(?P<name>[\w:]+)\((?P<params>.*)\)\s*$")


def undefined_symbols(library: str) -> Optional[list[str]]:
    """`nm -DC --undefined-only` lines of `library`, or None where nm is
    missing or cannot read it (then nothing is checked)."""
    nm = shutil.which("nm")
    if nm is None:
        return None
    p = subprocess.run([nm, "-DC", "--undefined-only", library], capture_output=True, text=True)
    return p.stdout.splitlines() if p.returncode == 0 else None


def missing_kernels(units: Iterable[KernelUnit], nm_lines: Iterable[str]) -> list[str]:
    """One located message per declared kernel the library leaves undefined."""
    undefined: dict = {}
    for line in nm_lines:
        m = _DEMANGLED.match(line)
        if m and "::native::" in m["name"]:
            undefined.setdefault(m["name"], m["params"])
    out = []
    for u in units:
        d = dispatch_of(u.func)
        if d is None or d.implicit or not undefined:
            continue
        ret, params = signature_of(u.func)
        ns = f"{u.func.namespace}::native"
        for key, name in d.kernels:
            if f"{ns}::{name}" in undefined:
                undefined.pop(f"{ns}::{name}")
                out.append(f"{u.func.file}:{key_line(u.func, key, 'dispatch')}: entry '{u.op}': the {key} kernel "
                           f"'{name}' is declared here but no object defines it: define `{ret} {ns}::{name}"
                           f"({', '.join(params)})` (in namespace {ns})")
    return out
