"""The build report's schema: a JSON Schema (draft 2020-12), written here
as data, and the validator of the part of JSON Schema it uses.

The vocabularies come from where the build decides them: the reasons a
unit is (re)generated are the generator's (codegen/engine/reasons.py, whose
sentences the English report prints), the kinds of TUs its tree's
(codegen/tree.py).  `python -m autograd_scons report --schema` prints the
schema for other tools.

Stability: within a VERSION, keys are only ever added (a reader ignores the
ones it does not know); a key renamed or removed, or a meaning changed, is
a new VERSION.  docs/ci.md#reading-a-report describes every key.
"""

from __future__ import annotations

from typing import Any

from autograd_scons.codegen.engine.reasons import Reason
from autograd_scons.codegen.tree import TUKind

FORMAT = "autograd-scons-build-report"
VERSION = 1

ENTRIES = ("scons", "load", "backend", "patch-torch")
STATUSES = ("ok", "failed", "up_to_date")   # up_to_date: no build ran (a stamp vouched for it)
UNIT_STATES = ("regenerated", "identical", "up_to_date", "removed")
REASONS = tuple(r.code for r in Reason)
# The generated TUs' kinds by the tree's, and the caller's own sources.
TU_KINDS = {TUKind.BUCKET: "bucket", TUKind.EDIT: "edit", TUKind.UNIT: "unit", TUKind.BINDING: "binding",
            TUKind.SUPPORT: "support", TUKind.CACHE_KEY: "digest", TUKind.STABLE: "stable"}
USER = "user"
OBJECT_KINDS = tuple(TU_KINDS.values()) + (USER,)
# compiled: its compile ran (and was no launcher hit, where the launcher's
# statistics can tell); retrieved: from the CacheDir; not_built: the build
# stopped before it.
FATES = ("compiled", "retrieved", "launcher_hit", "up_to_date", "failed", "not_built")


def _obj(required: dict, optional: dict | None = None) -> dict:
    props = dict(required, **(optional or {}))
    return {"type": "object", "properties": props, "required": sorted(required)}


_STR, _INT, _NUM, _BOOL = {"type": "string"}, {"type": "integer", "minimum": 0}, \
    {"type": "number", "minimum": 0}, {"type": "boolean"}


def _maybe(schema: dict) -> dict:
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if "enum" in schema:
        return dict(schema, type=kinds + ["null"], enum=list(schema["enum"]) + [None])
    return dict(schema, type=kinds + ["null"])


def _list(items: dict) -> dict:
    return {"type": "array", "items": items}


def _enum(values) -> dict:
    return {"type": "string", "enum": list(values)}


_COUNTS = _obj({"requests": _INT, "hits": _INT, "misses": _INT})
_IDENTITY = _obj({
    "torch": _maybe(_obj({"version": _maybe(_STR), "key": _maybe(_STR)})),
    "compiler": _obj({"command": _list(_STR), "version": _maybe(_STR)}),
    "flags": _list(_STR),          # the compile flags as the cache signs them (no $( $) parts)
    "digest": _STR,                # sha256 of compiler, version and flags: equal digests, shareable objects
})
_UNIT = _obj({"name": _STR, "kind": _maybe(_enum(("function", "kernel"))), "state": _enum(UNIT_STATES),
              "reason": _maybe(_enum(REASONS)), "renamed_from": _maybe(_STR)})
_FOLDER = _obj({
    "path": _STR,
    "specs": _obj({"native_functions": _maybe(_STR), "derivatives": _maybe(_STR), "tags": _maybe(_STR)}),
    "includes": _list(_STR),
    "parsed": _BOOL,               # false: the inputs were unchanged, no yaml read (units up to date)
    "note": _maybe(_STR),
    "units": _list(_UNIT),
    "tus": _list(_obj({"path": _STR, "kind": _enum(TU_KINDS.values())})),
    "layout": _obj({"buckets": _INT, "edit_tus": _INT, "alone": _list(_STR)}),
    "generate_s": _NUM,
    "identity": _maybe(_IDENTITY),
})
_OBJECT = _obj({"path": _STR, "source": _maybe(_STR), "kind": _enum(OBJECT_KINDS), "folder": _maybe(_INT),
                "fate": _enum(FATES), "seconds": _maybe(_NUM)})
_SUMMARY = _obj({"units": _INT, "regenerated": _INT, "removed": _INT, "objects": _INT,
                 **{f: _INT for f in FATES}, "hit_rate": _maybe({"type": "number", "minimum": 0, "maximum": 1})})

SCHEMA: dict = dict(_obj({
    "format": {"const": FORMAT},
    "version": {"const": VERSION},
    "tool": _maybe(_STR),
    "entry": _enum(ENTRIES),
    "status": _enum(STATUSES),
    "error": _maybe(_STR),
    "dry_run": _BOOL,
    "cachedir": _maybe(_STR),
    "launcher": _maybe(_obj({"command": _list(_STR), "statistics": _maybe(_enum(("sccache", "ccache"))),
                             "before": _maybe(_COUNTS), "after": _maybe(_COUNTS),
                             "hits": _maybe(_INT), "misses": _maybe(_INT)})),
    "times": _obj({"total_s": _NUM, "generate_s": _NUM, "compile_s": _NUM, "link_s": _NUM}),
    "summary": _SUMMARY,
    "folders": _list(_FOLDER),
    "objects": _list(_OBJECT),
}), **{"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "autograd-functions-scons build report"})

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number"):
        ok = isinstance(value, int) if kind == "integer" else isinstance(value, (int, float))
        return ok and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def problems(doc: Any, schema: dict = SCHEMA, where: str = "$") -> list[str]:
    """What in `doc` breaks `schema` (the keywords SCHEMA uses: type, const,
    enum, minimum, maximum, properties, required, items), each as
    `path: what`; [] when it validates.  Unknown keys are allowed."""
    out: list[str] = []
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(_is(doc, k) for k in kinds):
            return [f"{where}: {type(doc).__name__} where {' or '.join(kinds)} is due"]
    if "const" in schema and doc != schema["const"]:
        out.append(f"{where}: {doc!r}, not {schema['const']!r}")
    if "enum" in schema and doc not in schema["enum"]:
        out.append(f"{where}: {doc!r} is none of {', '.join(map(str, schema['enum']))}")
    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        if "minimum" in schema and doc < schema["minimum"]:
            out.append(f"{where}: {doc} < {schema['minimum']}")
        if "maximum" in schema and doc > schema["maximum"]:
            out.append(f"{where}: {doc} > {schema['maximum']}")
    if isinstance(doc, dict):
        out += [f"{where}: no {k!r}" for k in schema.get("required", ()) if k not in doc]
        for k, sub in schema.get("properties", {}).items():
            if k in doc:
                out += problems(doc[k], sub, f"{where}.{k}")
    if isinstance(doc, list) and "items" in schema:
        for i, item in enumerate(doc):
            out += problems(item, schema["items"], f"{where}[{i}]")
    return out
