"""How a saved attribute is held on the Function and handed to its formulas.

The loader gives each saved value's C++ type as a view or value type
(`at::IntArrayRef`, `at::Tensor`); a Function outlives the forward call, so it
must own its data: tensors go into SavedVariables (which break reference
cycles and check versions), array views into vectors, string views into
strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from autograd_scons.base.errors import FormulaError
from ...model.autograd import SavedAttribute
from ...model.cpp import (ArrayRefCType, CType, OptionalCType, doubleT, intArrayRefT, longT, optionalIntArrayRefT,
                       optionalSymIntArrayRefT, scalarT, stringViewT, symIntArrayRefT, tensorGeometryT,
                       typeAndSizeT)

# How a saved value is stored.
TENSOR, TENSOR_LIST, OPT_TENSOR_LIST, SCALAR_LIST, PLAIN = (
    "tensor", "tensor_list", "opt_tensor_list", "scalar_list", "plain")

# Optional array views, held as c10::OptionalArray of their element type.
_OPTIONAL_ARRAYS: dict[CType, str] = {
    optionalIntArrayRefT: "int64_t", OptionalCType(intArrayRefT): "int64_t",
    optionalSymIntArrayRefT: "c10::SymInt", OptionalCType(symIntArrayRefT): "c10::SymInt",
    OptionalCType(ArrayRefCType(doubleT)): "double",
}

# View types and the owning type stored instead.
_OWNED: dict[CType, str] = {
    intArrayRefT: "std::vector<int64_t>",
    symIntArrayRefT: "std::vector<c10::SymInt>",
    **{t: f"c10::OptionalArray<{e}>" for t, e in _OPTIONAL_ARRAYS.items()},
    stringViewT: "std::string",
    OptionalCType(stringViewT): "std::optional<std::string>",
    # The loader spells it as torch's generated code sees it; the type
    # itself lives in torch::autograd (function.h), which we always have.
    typeAndSizeT: "torch::autograd::TypeAndSize",
}


@dataclass(frozen=True)
class SavedSlot:
    """One saved attribute as C++: its members and the code around them."""
    name: str                 # what the formula calls it
    kind: str                 # TENSOR, TENSOR_LIST, ... (how it is stored)
    is_output: bool
    member_type: str          # C++ type of the main member
    field: str                # the main member's name (`self_` or `dim`)
    param_type: str           # apply_functional parameter type, without `&`
    saved_type: CType         # the saved attribute's type, as the loader gives it

    @property
    def members(self) -> list[tuple[str, str, Optional[str]]]:
        """(type, name, initialiser) of every data member."""
        out = [(self.member_type, self.field, "0" if self.saved_type == longT else None)]
        if self.kind in (TENSOR_LIST, OPT_TENSOR_LIST, SCALAR_LIST):
            # Set on release so that a second backward fails loudly instead of
            # seeing an empty list.
            out.append(("bool", f"{self.name}_released_", "false"))
        return out

    @property
    def includes(self) -> list[str]:
        """Headers the members need beyond the prelude's."""
        if self.saved_type == tensorGeometryT:
            return ["#include <ATen/TensorGeometry.h>"]
        if self.saved_type in _OPTIONAL_ARRAYS:
            return ["#include <ATen/core/ivalue.h>"]
        return []

    @property
    def release(self) -> list[str]:
        if self.kind == TENSOR:
            return [f"{self.field}.reset_data();"]
        if self.kind in (TENSOR_LIST, OPT_TENSOR_LIST):
            return [f"{self.field}.clear();", f"{self.name}_released_ = true;"]
        if self.kind == SCALAR_LIST:
            # libtorch clears scalars on release but never flags them.
            return [f"{self.field}.clear();"]
        return []

    @property
    def check(self) -> Optional[str]:
        if self.kind in (TENSOR_LIST, OPT_TENSOR_LIST):
            return f"TORCH_CHECK(!{self.name}_released_, ERR_BACKWARD_TWICE);"
        return None

    @property
    def unpack(self) -> Optional[str]:
        """How apply() turns the member into the formula's value, if it must."""
        owner = "getptr()" if self.is_output else "nullptr"
        if self.kind == TENSOR:
            return f"auto {self.name} = {self.field}.unpack({'getptr()' if self.is_output else ''});"
        if self.kind == TENSOR_LIST:
            return f"auto {self.name} = unpack_list({self.field}, {owner});"
        if self.kind == OPT_TENSOR_LIST:
            return f"auto {self.name} = unpack_opt_list({self.field});"
        return None

    @property
    def arg(self) -> str:
        """What apply() passes to apply_functional."""
        return self.name if self.unpack else self.field

    @property
    def collect(self) -> str:
        if self.kind in (TENSOR, TENSOR_LIST, OPT_TENSOR_LIST):
            return f"args.collect({self.field}, {'true' if self.is_output else 'false'});"
        return f"args.collect({self.field});"


def saved_slot(attr: SavedAttribute, is_output: bool) -> SavedSlot:
    """Raises FormulaError for a type that would keep a dangling view."""
    t, n = attr.type, attr.name
    if t.is_tensor or (t == scalarT and is_output):
        return SavedSlot(n, TENSOR, is_output, "SavedVariable", f"{n}_", "at::Tensor", t)
    if t.is_optional_tensor_list:
        return SavedSlot(n, OPT_TENSOR_LIST, is_output, "std::vector<SavedVariable>", f"{n}_",
                         "c10::List<std::optional<at::Tensor>>", t)
    if t.is_tensor_list:
        return SavedSlot(n, TENSOR_LIST, is_output, "std::vector<SavedVariable>", f"{n}_",
                         "std::vector<at::Tensor>", t)
    if t == ArrayRefCType(scalarT):
        return SavedSlot(n, SCALAR_LIST, is_output, "std::vector<at::Scalar>", n, "std::vector<at::Scalar>", t)
    owned = _OWNED.get(t)
    if owned is None and t.is_view:
        raise FormulaError(f"saved value '{n}' has type '{t}', a non-owning view; "
                         f"the autograd Function cannot store it")
    owned = owned or t.cpp_type()
    return SavedSlot(n, PLAIN, is_output, owned, n, owned, t)


def saved_slots(inputs: tuple[SavedAttribute, ...], outputs: tuple[SavedAttribute, ...]) -> list[SavedSlot]:
    """Inputs then outputs, each sorted by name (ASCII order, like libtorch)."""
    return ([saved_slot(a, False) for a in sorted(inputs, key=lambda a: a.name)]
            + [saved_slot(a, True) for a in sorted(outputs, key=lambda a: a.name)])
