"""Writing generated files: atomically, only what changed, and pruning only
what is ours.

A file whose bytes are unchanged keeps its mtime, so builds that compare
timestamps see nothing to do; a changed file is written to a temporary in
the same folder and renamed over the old one, so a reader (or a crash)
never sees half a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Optional

MARKER = b"// @generated"
_TMP = ".tmp"
# What a compiler makes of a generated TU next to it: removed with the TU.
OBJECT_SUFFIXES = (".o", ".os", ".obj", ".d", ".gch")


def _path(out_dir: str, rel: str) -> str:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a plain relative path: {rel!r}")
    return os.path.join(out_dir, *parts)


def stat_of(path: str) -> Optional[list]:
    """[size, mtime_ns], or None if there is nothing (readable) there."""
    try:
        st = os.stat(path)
    except (OSError, TypeError):
        return None
    return [st.st_size, st.st_mtime_ns]


def same_bytes(path: str, data: bytes) -> bool:
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


def write_files(out_dir: str, files: dict[str, str]) -> list[str]:
    """Write each file whose bytes differ; return those written, sorted."""
    written = []
    made: set[str] = set()
    for rel in sorted(files):
        path = _path(out_dir, rel)
        data = files[rel].encode("utf-8")
        if same_bytes(path, data):
            continue
        d = os.path.dirname(path)
        if d not in made:
            os.makedirs(d, exist_ok=True)
            made.add(d)
        write_atomic(path, data)
        written.append(rel)
    return written


def _is_generated(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(MARKER)) == MARKER
    except OSError:
        return False


@dataclass
class Pruned:
    removed: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)   # not ours: left alone


def prune(out_dir: str, folders: Iterable[str], keep: set, ours: set) -> Pruned:
    """In `folders`, delete what is not in `keep` but is ours: listed in
    `ours` (what the last manifest owned), marked as generated, one of our
    temporaries, or a compiler output of one of those.  Anything else is
    somebody's own file: reported, never deleted."""
    out = Pruned()
    for d in folders:
        try:
            names = sorted(os.listdir(os.path.join(out_dir, d)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        stems = {r.rsplit("/", 1)[-1].split(".", 1)[0] for r in ours | keep if r.startswith(d + "/")}
        for name in names:
            rel, path = f"{d}/{name}", os.path.join(out_dir, d, name)
            if rel in keep or not os.path.isfile(path):
                continue
            mine = (rel in ours or name.endswith(_TMP) or _is_generated(path)
                    or (name.endswith(OBJECT_SUFFIXES) and name.split(".", 1)[0] in stems))
            if not mine:
                out.foreign.append(rel)
            elif not (name.endswith(OBJECT_SUFFIXES) and f"{d}/{name.split('.', 1)[0]}.cpp" in keep):
                os.unlink(path)
                out.removed.append(rel)
    return out
