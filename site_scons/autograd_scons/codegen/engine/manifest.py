"""The manifest: what the last update wrote, so that the next one can trust it.

It records the digests of the input files, the generator and the options
(equal: the specs need not even be parsed), each unit's key, which unit owns
which file, each file's size and mtime when written (a file changed behind
our back is regenerated), the compile layout and the sources to compile, and
the kernels the specs declare for the extension to define (for the check of
the linked library, which then needs no parse either), and the digest of the
generated code (emit/cache_key.py; the SCons tool's digest takes it for the
generated folder's share, on the fast path too) with each file's part of it
(an update that parses reads no unchanged file to digest it again).
It is versioned and checksummed: anything wrong with it means "start from
scratch", never "trust it".
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from typing import Any, Optional

from ..model.declared_kernel import DeclaredKernel
from .keys import UnitKey, digest, dumps
from .buckets import Layout
from ..tree import MANIFEST  # noqa: F401  (its file's name: tree.py owns every name)
from .writer import write_atomic

FORMAT = 6
_MAGIC = "autograd-functions-manifest"


@dataclass
class Manifest:
    inputs: dict            # role -> digest of the file's bytes (None: not given)
    generator: str
    options: dict
    units: list[UnitKey]    # emission order
    files: dict             # relpath -> owning unit ("" for shared files)
    stats: dict             # relpath -> [size, mtime_ns] when last written/checked
    layout: Layout
    sources: list[str]      # relpaths to compile, in order
    kernels: list[DeclaredKernel]   # the kernels `dispatch:` declares
    code_digest: str        # the generated code's digest ("": a patch, which has none)
    file_digests: dict      # relpath -> its part of code_digest, for the files the stats vouch for

    def to_json(self) -> dict:
        return {"inputs": self.inputs, "generator": self.generator, "options": self.options,
                "units": [k.as_json() for k in self.units], "files": self.files,
                "stats": self.stats, "layout": self.layout.to_json(), "sources": self.sources,
                "kernels": [k.as_json() for k in self.kernels], "code_digest": self.code_digest,
                "file_digests": self.file_digests}

    @classmethod
    def from_json(cls, d: Any) -> "Manifest":
        if not isinstance(d, dict):
            raise ValueError("not an object")
        units = [UnitKey(*k) for k in d["units"]]
        if not all(isinstance(x, str) for k in units for x in k.as_json()):
            raise ValueError("bad unit record")
        files, stats, sources = d["files"], d["stats"], d["sources"]
        if not (isinstance(files, dict) and isinstance(stats, dict) and isinstance(sources, list)
                and isinstance(d["inputs"], dict) and isinstance(d["options"], dict)
                and isinstance(d["generator"], str)):
            raise ValueError("bad field types")
        if not isinstance(d["kernels"], list) or not isinstance(d["code_digest"], str) \
                or not isinstance(d["file_digests"], dict):
            raise ValueError("bad kernel list or code digest")
        return cls(d["inputs"], d["generator"], d["options"], units, files, stats,
                   Layout.from_json(d["layout"]), sources, [DeclaredKernel.from_json(k) for k in d["kernels"]],
                   d["code_digest"], d["file_digests"])


def read_manifest(path: str) -> tuple[Optional[Manifest], Optional[str]]:
    """(manifest, None), (None, None) if there is none, or (None, what is
    wrong with it)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, None
    except IsADirectoryError:
        return None, "a directory, not a file"
    except OSError as e:
        return None, f"unreadable ({e.strerror})"
    head, nl, body = data.partition(b"\n")
    parts = head.split(b" ")
    if len(parts) != 3 or parts[0] != _MAGIC.encode():
        return None, "not a manifest (bad header)"
    if parts[1] != str(FORMAT).encode():
        return None, f"format {parts[1].decode(errors='replace')!r}, expected {FORMAT}"
    if not nl or digest(body).encode() != parts[2]:
        return None, "checksum mismatch (corrupt, truncated or edited)"
    try:
        return Manifest.from_json(json.loads(body)), None
    except (ValueError, KeyError, TypeError) as e:
        return None, f"malformed ({e})"


def discard_manifest(path: str) -> None:
    """From here until the next write_manifest the tree is "unknown": a
    crash in between makes the next run start from scratch.  The name is
    ours, so whatever stands there (a directory too) goes."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        shutil.rmtree(path)


def write_manifest(path: str, m: Manifest) -> None:
    body = dumps(m.to_json()).encode()
    write_atomic(path, f"{_MAGIC} {FORMAT} {digest(body)}\n".encode() + body)
