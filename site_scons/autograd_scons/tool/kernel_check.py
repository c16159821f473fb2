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

import os
import re
import shutil
import subprocess
from typing import Iterable, Optional

from autograd_scons.codegen.model.declared_kernel import DeclaredKernel

_DEMANGLED = re.compile(r"^\s*U\s+(?P<name>[\w:]+)\((?P<params>.*)\)\s*$")
_DEFINED = re.compile(r"^\S+\s+[TtWw]\s+(?P<name>[\w:]+)\((?P<params>.*)\)\s*$")


def undefined_symbols(library: str) -> Optional[list[str]]:
    """`nm -DC --undefined-only` lines of `library`, or None where nm is
    missing or cannot read it (then nothing is checked)."""
    return _nm(["-DC", "--undefined-only"], library)


def defined_functions(obj: str) -> Optional[list[str]]:
    """`nm -C --defined-only` lines of an object, or None (not checked)."""
    return _nm(["-C", "--defined-only"], obj)


def _nm(flags: list[str], path: str) -> Optional[list[str]]:
    nm = shutil.which("nm")
    if nm is None:
        return None
    p = subprocess.run([nm, *flags, path], capture_output=True, text=True)
    return p.stdout.splitlines() if p.returncode == 0 else None


def misplaced_kernels(declared: Iterable[DeclaredKernel], defined: dict[str, list[str]]) -> list[str]:
    """One located message per declared kernel that the hand-written objects
    (`defined`: object -> its `nm -C --defined-only` lines) do not define in
    `<ns>::native` but define, with as many parameters, in another
    namespace: found before the link, which it may break (a kernel named as
    the op, in the op's namespace, is a second definition of the op's
    generated caller: `multiple definition of ...`)."""
    by_name: dict[str, list[tuple[str, str, str]]] = {}
    for obj, lines in defined.items():
        for line in lines:
            m = _DEFINED.match(line)
            if m:
                qualified = m["name"]
                by_name.setdefault(qualified.rpartition("::")[2], []).append((qualified, m["params"], obj))
    out = []
    for k in declared:
        found = by_name.get(k.name, [])
        if any(q == k.symbol for q, _, _ in found):
            continue
        elsewhere = [(q, obj) for q, params, obj in found if _arity(params) == len(k.params)]
        if elsewhere:
            q, obj = elsewhere[0]
            where = q.rpartition("::")[0] or "the global namespace"
            ns = f"{k.namespace}::native"
            out.append(f"{k.file}:{k.line}: entry '{k.op}': the {k.key} kernel '{k.name}' is defined in namespace "
                       f"{where} ({os.path.basename(obj)}), not in {ns}, where the op's generated header declares it: "
                       f"define `{k.ret} {ns}::{k.name}({', '.join(k.params)})` inside `namespace {ns} {{ }}`")
    return out


def _arity(params: str) -> int:
    """The number of parameters of a demangled parameter list."""
    depth, count = 0, 0 if not params.strip() or params.strip() == "void" else 1
    for c in params:
        depth += c in "<(["
        depth -= c in ">)]"
        count += c == "," and depth == 0
    return count


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
