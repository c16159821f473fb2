"""Which read-only Python properties a Function's saved values get, and how.

The rules are torchgen's (`gen_autograd_functions.py`, `save_var`), so that
a generated Function shows from Python what ATen's show:

- `_saved_<name>` and `_raw_saved_<name>` (the `SavedTensor` object, for
  saved-tensor hooks) for what is held as SavedVariables: tensors, optional
  tensors, tensor lists, lists of optional tensors, a saved Scalar output;
- `_saved_<name>` only for int and SymInt arrays (tuples; an optional one
  gives None), int64, SymInt, double, bool, their optionals, Scalar,
  optional Scalar, Scalar lists, strings and optional strings;
- nothing for the rest (ScalarType, Layout, TensorOptions, TypeAndSize,
  TensorGeometry, optional bool, nested vectors, ...): torchgen has no
  conversion for them, and neither do we; they are skipped, never a
  compile error.

One difference, on purpose: integers are converted as signed (torchgen
converts through `PyLong_FromUnsignedLong`, so a saved `dim=-1` reads back as
2**64 - 1); the property names are the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...model.cpp import (ArrayRefCType, OptionalCType, boolT, doubleT, intArrayRefT, longT, optionalIntArrayRefT,
                       optionalSymIntArrayRefT, scalarT, stringViewT, symIntArrayRefT, symIntT)
from ..functions.saved import OPT_TENSOR_LIST, SCALAR_LIST, TENSOR, TENSOR_LIST, SavedSlot

# Plain saved types with a conversion: (shape, converter in python/bindings.h).
# shape: "one" a value, "opt" an std::optional, "seq" a vector,
# "opt_seq" a c10::OptionalArray.
_PLAIN: dict = {
    longT: ("one", "py_int"), symIntT: ("one", "py_symint"), doubleT: ("one", "py_float"),
    boolT: ("one", "py_bool"), scalarT: ("one", "py_scalar"), stringViewT: ("one", "py_str"),
    OptionalCType(longT): ("opt", "py_int"), OptionalCType(symIntT): ("opt", "py_symint"),
    OptionalCType(doubleT): ("opt", "py_float"), OptionalCType(scalarT): ("opt", "py_scalar"),
    OptionalCType(stringViewT): ("opt", "py_str"),
    intArrayRefT: ("seq", "py_int"), symIntArrayRefT: ("seq", "py_symint"),
    optionalIntArrayRefT: ("opt_seq", "py_int"), OptionalCType(intArrayRefT): ("opt_seq", "py_int"),
    optionalSymIntArrayRefT: ("opt_seq", "py_symint"), OptionalCType(symIntArrayRefT): ("opt_seq", "py_symint"),
    OptionalCType(ArrayRefCType(doubleT)): ("opt_seq", "py_float"),
}

_WRAP = "[&](const SavedVariable& v) { return THPVariable_Wrap(v.unpack(self->cdata)); }"


@dataclass(frozen=True)
class Property:
    name: str            # `_saved_self`, `_raw_saved_self`
    getter: str          # its C++ getter function
    body: tuple[str, ...]  # the getter's statements; `node` is the Function, `self` the Python object


def _released(slot: SavedSlot) -> str:
    # Lists are cleared on release: without the flag a second read would see ().
    return f"if (node.{slot.name}_released_) return backward_twice();"


def _value(slot: SavedSlot) -> Optional[tuple[str, ...]]:
    """The `_saved_` getter's statements, or None where torchgen gives none."""
    f = slot.field
    if slot.kind == TENSOR:
        return (f"return THPVariable_Wrap(node.{f}.unpack(self->cdata));",)
    if slot.kind in (TENSOR_LIST, OPT_TENSOR_LIST):
        return (_released(slot), f"return tuple_of(node.{f}, {_WRAP});")
    if slot.kind == SCALAR_LIST:
        return (_released(slot), f"return tuple_of(node.{f}, py_scalar);")
    rule = _PLAIN.get(slot.saved_type)
    if rule is None:
        return None
    shape, conv = rule
    if shape == "one":
        return (f"return {conv}(node.{f});",)
    if shape == "opt":
        return (f"if (!node.{f}.has_value()) Py_RETURN_NONE;", f"return {conv}(*node.{f});")
    if shape == "seq":
        return (f"return tuple_of(node.{f}, {conv});",)
    return (f"if (!node.{f}.list.has_value()) Py_RETURN_NONE;", f"return tuple_of(*node.{f}.list, {conv});")


def _raw(slot: SavedSlot) -> Optional[tuple[str, ...]]:
    """The `_raw_saved_` getter's statements (SavedVariables only)."""
    if slot.kind == TENSOR:
        return (f"return saved_tensor(node.{slot.field});",)
    if slot.kind in (TENSOR_LIST, OPT_TENSOR_LIST):
        return (_released(slot), f"return tuple_of(node.{slot.field}, saved_tensor);")
    return None


def properties(op: str, slots: list[SavedSlot]) -> list[Property]:
    """`op`'s saved-value properties, in torchgen's order: the slots' order
    (inputs then outputs, each by name), `_saved_` before `_raw_saved_`."""
    out = []
    for s in slots:
        # Distinct last words: `x`'s raw getter can never be named as `x_raw`'s getter.
        for prefix, suffix, body in (("_saved_", "getter", _value(s)), ("_raw_saved_", "raw_saved", _raw(s))):
            if body is not None:
                out.append(Property(prefix + s.name, f"THP{op}_{s.name}_{suffix}", body))
    return out
