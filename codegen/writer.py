"""Writing generated files: atomically, and only what changed.

A file whose bytes are unchanged keeps its mtime, so builds that compare
timestamps see nothing to do; a changed file is written to a temporary in
the same folder and renamed over the old one, so a reader (or a crash)
never sees half a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

# Folders whose contents are all ours: pruning looks only there.
GENERATED_DIRS = ("functions", "unity", "ops")
_MARKER = b"// @generated"
_TMP = ".tmp"


@dataclass(frozen=True)
class WriteReport:
    written: list[str] = field(default_factory=list)    # relative paths, sorted
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def _path(out_dir: str, rel: str) -> str:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a plain relative path: {rel!r}")
    return os.path.join(out_dir, *parts)


def _same(path: str, data: bytes) -> bool:
    try:
        if os.stat(path).st_size != len(data):
            return False
        with open(path, "rb") as f:
            return f.read() == data
    except OSError:
        return False


def write_atomic(path: str, data: bytes) -> None:
    d, name = os.path.split(path)
    tmp = os.path.join(d, f".{name}.{os.getpid()}{_TMP}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _is_generated(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(_MARKER)) == _MARKER
    except OSError:
        return False


def write_tree(out_dir: str, files: dict[str, str], *, prune: bool = True) -> WriteReport:
    """Write `files` (relative path -> text) under out_dir.  With prune,
    also delete from functions/ and unity/ what `files` no longer has:
    files we generated (they carry the @generated marker) and stray
    temporaries.  Nothing else is ever deleted."""
    written, unchanged = [], []
    made: set[str] = set()
    for rel in sorted(files):
        path = _path(out_dir, rel)
        data = files[rel].encode("utf-8")
        if _same(path, data):
            unchanged.append(rel)
            continue
        d = os.path.dirname(path)
        if d not in made:
            os.makedirs(d, exist_ok=True)
            made.add(d)
        write_atomic(path, data)
        written.append(rel)
    removed = _prune(out_dir, files) if prune else []
    return WriteReport(written, unchanged, removed)


def _prune(out_dir: str, files: dict[str, str]) -> list[str]:
    removed = []
    for d in GENERATED_DIRS:
        try:
            names = sorted(os.listdir(os.path.join(out_dir, d)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            rel = f"{d}/{name}"
            path = os.path.join(out_dir, d, name)
            if rel in files or not os.path.isfile(path):
                continue
            if name.endswith(_TMP) or _is_generated(path):
                os.unlink(path)
                removed.append(rel)
    return removed
