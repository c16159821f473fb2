"""A parsed native_functions.yaml (`NativeSpec`) as plain values, and back:
the format of the native cache (native_cache.py), which must be data that
cannot execute, unlike a pickle, since build folders travel (CI caches
restored from another branch).

A record is a frozen dataclass of the parse, from a fixed list of classes;
its fields are encoded in declaration order.  The encoding is JSON's values:
str, int, float, bool and null as themselves, and every container a
one-key object that says what it is:

    {"o": i}            the i-th record of the table (shared records stay
                        shared: a NativeFunction is in `functions`, `ordered`
                        and its view group)
    {"t": [...]}        a tuple          {"l": [...]}       a list
    {"f": [...]}        a frozenset      {"d": [[k, v], ...]}  a dict (plain keys)

A spec is `[table, root]`, each table row `[class name, [field values]]`
referring only to earlier rows.  Decoding checks every value and row and
raises ValueError on anything else; a record is rebuilt by setting its
fields, as unpickling did (no __init__), so its cached properties are
computed again when asked.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..model.native import Dispatch, Held, NativeFunction, NativeSpec, View, ViewGroup
from ..model.schema import FunctionSchema, OperatorName
from ..model.transforms import Autocast, Fake, Redispatch, Vmap
from ..model.schema_parts import Annotation, Argument, Arguments, BaseType, CustomClassType, ListType, OptionalType, Return

_CLASSES = {c.__name__: c for c in (NativeSpec, NativeFunction, ViewGroup, FunctionSchema, OperatorName, Arguments,
                                    Argument, Return, Annotation, BaseType, CustomClassType, ListType, OptionalType,
                                    Dispatch, View, Held, Autocast, Redispatch, Vmap, Fake)}
_FIELDS = {name: tuple(f.name for f in dataclasses.fields(c)) for name, c in _CLASSES.items()}
_PLAIN = (str, int, float, bool, type(None))
_PLAIN_TYPES = frozenset(_PLAIN)


def encode(spec: NativeSpec) -> list:
    """`spec` as JSON's values; ValueError for a value of another type."""
    table: list = []
    index: dict[int, int] = {}
    keep = []   # the objects indexed by id, alive until the end

    def enc(v: Any) -> Any:
        if isinstance(v, _PLAIN):
            return v
        if isinstance(v, list):
            return {"l": [enc(x) for x in v]}
        if isinstance(v, tuple):
            return {"t": [enc(x) for x in v]}
        if isinstance(v, frozenset):
            return {"f": sorted((enc(x) for x in v), key=repr)}
        if isinstance(v, dict):
            return {"d": [[plain(k), enc(x)] for k, x in v.items()]}
        name = type(v).__name__
        if _CLASSES.get(name) is not type(v):
            raise ValueError(f"cannot encode a {type(v).__qualname__}")
        i = index.get(id(v))
        if i is None:
            row = [name, [enc(getattr(v, f)) for f in _FIELDS[name]]]
            i = index[id(v)] = len(table)
            table.append(row)
            keep.append(v)
        return {"o": i}

    def plain(k: Any) -> Any:
        if not isinstance(k, _PLAIN):
            raise ValueError(f"cannot encode a {type(k).__qualname__} key")
        return k

    return [table, enc(spec)]


def decode(data: Any) -> NativeSpec:
    """The NativeSpec `data` encodes; ValueError for anything else."""
    if not (type(data) is list and len(data) == 2 and type(data[0]) is list):
        raise ValueError("not an encoded native spec")
    table, root = data
    built: list = []

    def dec(v: Any) -> Any:
        t = type(v)
        if t is str or t is int or t is bool or v is None or t is float:
            return v
        if t is dict and len(v) == 1:
            (tag, payload), = v.items()
            if tag == "o" and type(payload) is int and 0 <= payload < len(built):
                return built[payload]
            if type(payload) is list:
                if tag == "t":
                    return tuple([dec(x) for x in payload])
                if tag == "f":
                    return frozenset([dec(x) for x in payload])
                if tag == "l":
                    return [dec(x) for x in payload]
                if tag == "d" and all(type(kv) is list and len(kv) == 2 and type(kv[0]) in _PLAIN_TYPES
                                      for kv in payload):
                    return {k: dec(x) for k, x in payload}
        raise ValueError(f"unexpected {t.__name__} in an encoded native spec")

    for row in table:
        if not (type(row) is list and len(row) == 2 and type(row[0]) is str and row[0] in _CLASSES
                and type(row[1]) is list and len(row[1]) == len(_FIELDS[row[0]])):
            raise ValueError("bad record")
        cls = _CLASSES[row[0]]
        obj = cls.__new__(cls)
        # (frozen dataclasses with a __dict__: their fields, set as unpickling sets them)
        obj.__dict__.update(zip(_FIELDS[row[0]], [dec(v) for v in row[1]]))
        built.append(obj)
    spec = dec(root)
    if not isinstance(spec, NativeSpec):
        raise ValueError("the root is not a NativeSpec")
    return spec
