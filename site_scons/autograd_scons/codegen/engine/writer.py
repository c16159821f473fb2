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

from ..tree import MARKER

_TMP = ".tmp"
# What a compiler makes of a generated TU next to it: removed with the TU.
OBJECT_SUFFIXES = (".o", ".os", ".obj", ".d", ".gch")


def _path(out_dir: str, rel: str) -> str:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a plain relative path: {rel!r}")
    return os.path.join(out_dir, *parts)


def stat_of(path: str, strict: bool = False) -> Optional[list]:
    """A file's fingerprint, the one every record of this project keeps (the
    manifest, the stamps): [mtime_ns, size], or None if there is nothing
    (readable) there.  A copied tree keeps it (copies keep mtimes), so a
    copied build is still up to date.  `strict`, for an output nobody else
    may touch (load()'s library): [mtime_ns, size, inode, ctime_ns], which a
    writer that sets the mtime back still moves."""
    try:
        st = os.stat(path)
    except (OSError, TypeError):
        return None
    return [st.st_mtime_ns, st.st_size] + ([st.st_ino, st.st_ctime_ns] if strict else [])


def same_bytes(path: str, data: bytes) -> bool:
    try:
        if os.stat(path).st_size != len(data):
            return False
        with open(path, "rb") as f:
            return f.read() == data
    except OSError:
        return False


def write_atomic(path: str, data: bytes, mode: int = 0o666) -> None:
    """`path` replaced by `data`, never half-written: a temporary beside it
    (made with `mode` less the umask, never through a link), renamed over
    it.  On failure (a full disk) the temporary is removed and the error
    names `path`."""
    d, name = os.path.split(path)
    tmp = os.path.join(d, f".{name}.{os.getpid()}{_TMP}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and e.filename != path:
            raise OSError(e.errno, e.strerror, path) from None
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
        files = [n for n in names if f"{d}/{n}" not in keep and os.path.isfile(os.path.join(out_dir, d, n))]
        sources = [n for n in files if not n.endswith(OBJECT_SUFFIXES)]
        gone = {n for n in sources if f"{d}/{n}" in ours or n.endswith(_TMP)
                or _is_generated(os.path.join(out_dir, d, n))}
        # A compiler output belongs to a stem we generate or generated.
        stems = {r.rsplit("/", 1)[-1].split(".", 1)[0] for r in ours | keep if r.startswith(d + "/")}
        stems |= {n.split(".", 1)[0] for n in gone}
        for n in files:
            stem = n.split(".", 1)[0]
            if n in gone or (n.endswith(OBJECT_SUFFIXES) and stem in stems
                             and f"{d}/{stem}.cpp" not in keep):
                os.unlink(os.path.join(out_dir, d, n))
                out.removed.append(f"{d}/{n}")
            elif not n.endswith(OBJECT_SUFFIXES) or stem not in stems:
                out.foreign.append(f"{d}/{n}")
    return out
