"""The project `bench` measures (command.py): what it is (a folder with an
SConstruct, or a Python file calling load()), its copies, and the edits the
scenarios make to a copy.  Nothing here writes into the project itself.

A copy holds what version control would check out: in a git work tree the
files git lists (tracked, and untracked ones it does not ignore), else
every file but build outputs (BUILD_OUTPUTS), so a build folder already in
the project never makes a cold build warm.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Optional

from autograd_scons.base.errors import Error

# Left out of a copy of a project that is not a git work tree.
BUILD_OUTPUTS = (".git", "build", "build-*", "dist", "*.egg-info", "__pycache__", ".sconsign*", "autograd-bench",
                 ".pytest_cache", ".mypy_cache", ".ruff_cache")
HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".cuh")
# Formula keys that are not an input's backward formula.
_NOT_FORMULAS = ("name", "dispatch", "output_differentiability", "result")
_NOT_TENSOR_EXPRESSIONS = ("non_differentiable", "not_implemented", "auto_linear", "auto_element_wise")
EDIT_MARK = "// edited by python -m autograd_scons bench"


class BenchError(Error, RuntimeError):
    """What stops a benchmark, in one line."""


@dataclass(frozen=True)
class Project:
    root: str                 # the folder copied
    script: Optional[str]     # a load() script, relative to root; None: an SConstruct in root

    @classmethod
    def of(cls, path: str) -> "Project":
        path = os.path.abspath(path)
        if os.path.isdir(path):
            if not os.path.isfile(os.path.join(path, "SConstruct")):
                raise BenchError(f"{path}: no SConstruct there (give a folder with one, or a Python file "
                                 "that calls load())")
            return cls(path, None)
        if os.path.isfile(path) and path.endswith(".py"):
            return cls(os.path.dirname(path), os.path.basename(path))
        raise BenchError(f"{path}: neither a folder with an SConstruct nor a Python file")

    @property
    def kind(self) -> str:
        return "load" if self.script else "sconstruct"


def _git_files(root: str) -> Optional[list]:
    try:
        done = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return sorted({p for p in done.stdout.decode(errors="surrogateescape").split("\0") if p})


def copy(project: Project, dst: str) -> str:
    """A copy of the project at `dst` (made; it must not exist)."""
    files = _git_files(project.root)
    if files is None:
        shutil.copytree(project.root, dst, symlinks=True, ignore=shutil.ignore_patterns(*BUILD_OUTPUTS))
        return dst
    os.makedirs(dst)
    for rel in files:
        src = os.path.join(project.root, rel)
        if not os.path.lexists(src):   # deleted in the work tree, still tracked
            continue
        target = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), target)
        elif os.path.isfile(src):
            shutil.copy2(src, target)
    return dst


def inside(path: Optional[str], folder: str) -> bool:
    if not path:
        return False
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real.startswith(base + os.sep)


# --- the formula edit ---------------------------------------------------------

_ENTRY = re.compile(r"^- name: *(.+?) *$")
_FORMULA = re.compile(r"^( +)([A-Za-z_][\w, ]*): *(\S.*?) *$")


def formula_lines(text: str) -> list:
    """(line index, entry name, key, formula) of each one-line backward
    formula a benchmark can edit, in file order."""
    out, entry = [], None
    for i, line in enumerate(text.split("\n")):
        m = _ENTRY.match(line)
        if m:
            entry = m.group(1)
            continue
        m = _FORMULA.match(line)
        if entry is None or m is None or not m.group(1):
            continue
        key, value = m.group(2).strip(), m.group(3)
        if key in _NOT_FORMULAS or key.startswith("result") or value.startswith(("'", '"', "|", ">", "#")) \
                or value.startswith(_NOT_TENSOR_EXPRESSIONS) or " #" in value:
            continue
        out.append((i, entry, key, value))
    return out


def edit_formula(path: str, op: Optional[str] = None) -> str:
    """Edit one formula of derivatives.yaml at `path` so that it still
    compiles and computes the same (`F` becomes `(F)`): the first entry's,
    or that of the entry named `op` (its name before the parenthesis, e.g.
    `scale` or `add.Tensor`).  Returns what was edited."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = formula_lines(text)
    if op is not None:
        found = [x for x in found if x[1].split("(", 1)[0] == op]
        if not found:
            raise BenchError(f"{path}: no entry '{op}' with a one-line formula to edit")
    elif not found:
        raise BenchError(f"{path}: no one-line formula to edit (name one with --formula OP)")
    i, entry, key, value = found[0]
    lines = text.split("\n")
    m = _FORMULA.match(lines[i])
    assert m is not None   # (the line was found by this pattern)
    lines[i] = f"{m.group(1)}{m.group(2).rstrip()}: ({value})"
    _write(path, "\n".join(lines))
    return f"{entry.split('(', 1)[0]}: {key}"


def remove_entry(path: str, op: Optional[str] = None) -> Optional[tuple]:
    """Remove the entry whose formula edit_formula would edit; (what, its
    text, where) to put it back, or None when it is the file's only entry
    (the generator refuses a derivatives.yaml without one)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = [x for x in formula_lines(text) if op is None or x[1].split("(", 1)[0] == op]
    if not found:
        raise BenchError(f"{path}: no entry to remove")
    if len(re.findall(r"^- name:", text, re.M)) < 2:
        return None
    entry = found[0][1]
    m = re.search(r"^- name: *" + re.escape(entry) + r" *\n(?:(?!- name:).*\n?)*", text, re.M)
    if m is None:
        raise BenchError(f"{path}: entry {entry!r} not found again")
    _write(path, text[:m.start()] + text[m.end():])
    return entry.split("(", 1)[0], m.group(0), m.start()


def add_entry(path: str, removed: tuple) -> None:
    _, entry_text, at = removed
    with open(path, encoding="utf-8") as f:
        text = f.read()
    _write(path, text[:at] + entry_text + text[at:])


# --- the header edit ----------------------------------------------------------

def find_header(copy_root: str, includes: list, named: Optional[str] = None) -> Optional[str]:
    """The header to edit in a copy: `named` (relative to the project), else
    the first of the generated code's `includes` found in the copy, else the
    project's first header; None when it has none."""
    if named is not None:
        path = os.path.join(copy_root, named)
        if not os.path.isfile(path):
            raise BenchError(f"--header {named}: no such file in the project")
        return path
    headers = []
    for d, subdirs, names in os.walk(copy_root):
        subdirs[:] = sorted(s for s in subdirs if not s.startswith(".") and s not in ("build", "dist", "__pycache__"))
        headers += [os.path.join(d, n) for n in sorted(names) if n.endswith(HEADER_SUFFIXES)]
    for inc in includes:
        for h in headers:
            if h.replace(os.sep, "/").endswith("/" + inc):
                return h
    return headers[0] if headers else None


def edit_header(path: str) -> None:
    """A comment appended: the bytes change (SCons's content signature), the code does not."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    _write(path, text + ("" if text.endswith("\n") else "\n") + EDIT_MARK + "\n")


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
