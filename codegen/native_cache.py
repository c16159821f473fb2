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
"""

from __future__ import annotations

import json
import os
from typing import Optional

import xxhash

from .api.native import NativeSpec
from .keys import generator_version
from .native_functions import parse_native_functions
from .native_records import decode, encode
from .tree import NATIVE_CACHE  # noqa: F401  (its file's name: tree.py owns every name)
from .writer import write_atomic
_MAGIC = b"autograd-native-cache 2 "


class NativeCache:
    """One output folder's cache: `parse()` returns the NativeSpec of a
    native_functions.yaml (stored, or parsed); `flush()`, called once the
    whole update succeeded, stores a fresh parse."""

    def __init__(self, path: str):
        self.path = path
        self._pending: Optional[tuple[bytes, NativeSpec]] = None

    def parse(self, path: str, text: str, valid_tags: Optional[set[str]]) -> NativeSpec:
        key = _key(path, text, valid_tags)
        native = self._load(key)
        if native is None:
            native = parse_native_functions(path, text, valid_tags)
            self._pending = (key, native)
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
        if self._pending is None:
            return
        key, native = self._pending
        self._pending = None
        try:
            data = json.dumps(encode(native), separators=(",", ":")).encode()
        except ValueError:
            return  # a value the format has no spelling for: parsed again next time
        try:
            write_atomic(self.path, _MAGIC + key + b"\n" + data)
        except OSError:
            pass  # a read-only or full output folder: the next run parses again


def _key(path: str, text: str, valid_tags: Optional[set[str]]) -> bytes:
    h = xxhash.xxh3_128()
    for part in (generator_version(), os.path.abspath(path), text,
                 "\0".join(sorted(valid_tags)) if valid_tags is not None else "\1no tags"):
        h.update(part.encode() + b"\0")
    return h.hexdigest().encode()
