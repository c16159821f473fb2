"""Cache keys: what decides whether a unit's files are regenerated.

A unit's key hashes everything its generated text can depend on: its
derivatives entry, its matched native function, the semantic content of
what it renders (which covers tags and derived foreach/view_copy data), the
generator's own source, the emission options and the unit's name, so that a
renumbering (`MulBackward0` becoming `MulBackward1`) regenerates exactly the
renamed units.  The parts are kept apart as well, only to say *why*.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import json
import os
from dataclasses import dataclass
from typing import Any

import xxhash

from .units import Unit

# Fields that locate an entry for messages but never reach the generated text
# (tests check that rendering ignores them), so that inserting an entry does
# not re-key every entry below it.
_UNKEYED_FIELDS = frozenset({"file", "line", "entry", "raw"})


def digest(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def canonical(obj: Any) -> Any:
    """A JSON-able, order-independent rendering of specs data (dataclasses,
    yaml values, sets); raises TypeError rather than guess (a repr with an
    address in it would silently make every key unstable)."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [canonical(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, (set, frozenset)):
        return sorted((canonical(x) for x in obj), key=dumps)
    if type(obj).__name__ == "FunctionSchema":
        return str(obj)  # parsing guarantees the string is canonical
    if dataclasses.is_dataclass(obj):
        d = {f: canonical(getattr(obj, f)) for f in _keyed_fields(type(obj))}  # type: ignore[arg-type]
        d["<t>"] = type(obj).__name__
        return d
    if isinstance(obj, enum.Enum):
        return canonical(obj.value)
    if isinstance(obj, (datetime.date, datetime.datetime)):  # yaml timestamps
        return obj.isoformat()
    raise TypeError(f"cannot key a {type(obj).__name__}")


@functools.lru_cache(maxsize=None)
def _keyed_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in _UNKEYED_FIELDS)


def dumps(obj: Any) -> str:
    """Canonical JSON text: sorted keys, no spaces."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def hash_of(obj: Any) -> str:
    return digest(dumps(canonical(obj)).encode())


@functools.lru_cache(maxsize=None)
def generator_version() -> str:
    """Hash of the generator's own source (every file of the codegen package
    but bytecode): editing a template or a helper regenerates everything."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the package codegen/, every stage
    h = xxhash.xxh3_128()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")) or name.startswith("."):
                continue
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read())
            h.update(b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class UnitKey:
    name: str
    kind: str     # Kind.value
    key: str      # what decides regeneration
    entry: str    # digest of the raw derivatives entry  } kept apart only
    native: str   # digest of the matched native function } to say *why*
    info: str     # digest of everything else the text depends on

    def as_json(self) -> list:
        return [self.name, self.kind, self.key, self.entry, self.native, self.info]


def unit_key(unit: Unit, options: dict, generator: str) -> UnitKey:
    s = unit.subject
    entry = hash_of(s.entry)
    # Derived functions (view_copy, out= siblings) have no yaml of their own:
    # their schema stands for them.
    native = hash_of(s.func.raw or {"<derived>": str(s.func.func)})
    # (the ops its formulas call: their headers are in its text)
    semantic = hash_of([s, list(unit.callees)] if unit.callees else s)
    key = hash_of({"unit": unit.name, "kind": unit.kind.value, "generator": generator,
                   "options": options, "entry": entry, "native": native, "info": semantic})
    return UnitKey(unit.name, unit.kind.value, key, entry, native, semantic)
