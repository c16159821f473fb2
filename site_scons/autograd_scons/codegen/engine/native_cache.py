"""The parsed native_functions.yaml, kept beside the manifest for the next run.

A formula edit changes derivatives.yaml only, yet every update after it used
to parse native_functions.yaml again: on torch's specs that is about half of
a one-edit generation, and a larger share the larger the specs
(docs/incrementality.md).
The parse result (a `NativeSpec`) is stored here as JSON data
(native_records.py: never a pickle, which a planted file could make run
code), under a key of everything it is made from: the file's path and
bytes, the valid tags and the generator's own source.  Anything else (no
file, another key, a file that is not JSON of an encoded spec) is a miss: the specs are parsed as before, and the cache
is rewritten (atomically, and only once the whole update succeeded: bad
input never leaves a cache behind; a dry run writes none).  The cache is an optimisation only: the manifest's
keys decide what is regenerated, whatever this file holds.

Encoding a fresh parse is a sizeable part of a cold generation
(docs/benchmarks-cold.md), and nothing else waits on it: so where the process can
fork, a child encodes it on another core while the update renders and
writes the sources, then waits for the verdict on a pipe.  It writes the
file only when told the whole update succeeded (`flush`); an update that
fails (`close`), or a parent killed however it dies (the pipe's end of
file), makes it exit without writing.  Off Linux, or with other threads
running (which a fork could catch holding a lock), the parent encodes at
`flush`, as before.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Optional

import xxhash

from ..model.native import NativeSpec
from .keys import generator_version
from ..parse.native_functions import parse_native_functions
from .native_records import decode, encode
from ..tree import NATIVE_CACHE  # noqa: F401  (its file's name: tree.py owns every name)
from .writer import write_atomic
_MAGIC = b"autograd-native-cache 2 "


class NativeCache:
    """One output folder's cache: `parse()` returns the NativeSpec of a
    native_functions.yaml (stored, or parsed); `flush()`, called once the
    whole update succeeded, stores a fresh parse; `close()`, called in any
    case after, drops one that was not flushed."""

    def __init__(self, path: str):
        self.path = path
        self._pending: Optional[tuple[bytes, NativeSpec]] = None
        self._writer: Optional[_Writer] = None

    def parse(self, path: str, text: str, valid_tags: Optional[set[str]]) -> NativeSpec:
        key = _key(path, text, valid_tags)
        native = self._load(key)
        if native is None:
            native = parse_native_functions(path, text, valid_tags)
            self.close()
            self._pending = (key, native)
            self._writer = _Writer.start(self.path, key, native)
        return native

    def _load(self, key: bytes) -> Optional[NativeSpec]:
        try:
            with open(self.path, "rb") as f:
                if f.readline() != _MAGIC + key + b"\n":
                    return None
                return decode(json.loads(f.read()))
        except Exception:  # missing, unreadable, truncated, foreign: a miss, never an error
            return None

    def flush(self) -> None:
        pending, writer = self._pending, self._writer
        self._pending = self._writer = None
        if writer is not None:
            writer.finish(write=True)
        elif pending is not None:
            _write(self.path, *pending)

    def close(self) -> None:
        """Drop a parse not flushed: its writer exits without writing."""
        writer = self._writer
        self._pending = self._writer = None
        if writer is not None:
            writer.finish(write=False)


def _encoded(key: bytes, native: NativeSpec) -> bytes:
    """The cache file's bytes; ValueError for a value the format has no spelling for."""
    return _MAGIC + key + b"\n" + json.dumps(encode(native), separators=(",", ":")).encode()


def _write(path: str, key: bytes, native: NativeSpec) -> None:
    try:
        data = _encoded(key, native)
    except ValueError:
        return  # parsed again next time
    try:
        write_atomic(path, data)
    except OSError:
        pass  # a read-only or full output folder: the next run parses again


class _Writer:
    """A forked child that encodes a parse, then writes it if the parent
    says so (one byte on a pipe) and exits in any case."""

    def __init__(self, pid: int, verdict: int):
        self.pid, self.verdict = pid, verdict

    @classmethod
    def start(cls, path: str, key: bytes, native: NativeSpec) -> Optional["_Writer"]:
        if not _alone():
            return None
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            return None
        if pid == 0:  # the child: never returns, never runs the parent's exit handlers
            try:
                os.close(w)
                data = _encoded(key, native)  # (a ValueError or OSError: no cache, as in _write)
                if os.read(r, 1) == b"w":
                    write_atomic(path, data)
            finally:
                os._exit(0)
        os.close(r)
        return cls(pid, w)

    def finish(self, write: bool) -> None:
        try:
            if write:
                os.write(self.verdict, b"w")
            else:  # nothing to wait for: its encoding is of no use
                os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(self.verdict)
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass


def _alone() -> bool:
    """Whether this process may fork a child that runs Python: on Linux, with
    no other thread (a library's native ones count: a fork can catch one
    holding a lock, and Python 3.12 warns of it).  Elsewhere: never (macOS's
    system libraries do not survive a fork without an exec)."""
    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _key(path: str, text: str, valid_tags: Optional[set[str]]) -> bytes:
    h = xxhash.xxh3_128()
    for part in (generator_version(), os.path.abspath(path), text,
                 "\0".join(sorted(valid_tags)) if valid_tags is not None else "\1no tags"):
        h.update(part.encode() + b"\0")
    return h.hexdigest().encode()
