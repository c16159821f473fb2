"""How schema arguments and returns are spelled in libtorch's C++ API.

C++ types are values (`ConstRefCType(tensorT)`), not text: code that must
know whether a value is a tensor, a tensor list or a view compares types or
asks the type, and `cpp_type()` spells it only where C++ is written.  Each
mapping below returns the type as a C++ parameter is declared
(`const at::Tensor &`); `remove_const_ref()` gives the type a saved copy of
it is held as (`at::Tensor`).  SymInts keep their symbolic C++ types (the
`_symint` API), as the autograd codegen uses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from autograd_scons.base.errors import FormulaError
from .schema import Argument, BaseType, CustomClassType, FunctionSchema, ListType, OptionalType, Return, Type


class CType:
    """A C++ type; the subclasses below are its only kinds."""

    def cpp_type(self) -> str:
        raise NotImplementedError

    def remove_const_ref(self) -> "CType":
        """The type without `const` and `&` (at any depth): what holds a copy."""
        raise NotImplementedError

    @property
    def is_view(self) -> bool:
        """Whether a value of this type may point into memory it does not own
        (a reference, an ArrayRef, a string view), so that keeping it past
        the call could leave it dangling."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.cpp_type()

    # What autograd treats specially, whatever the constness or reference.

    @property
    def is_tensor(self) -> bool:
        """A tensor or an optional one."""
        return self.remove_const_ref() in _TENSORS

    @property
    def is_tensor_list(self) -> bool:
        """Any list of tensors: `at::TensorList`, `at::ITensorListRef`, a vector
        of tensors, and the list of optional tensors (`Tensor?[]`)."""
        return self.remove_const_ref() in _TENSOR_LISTS

    @property
    def is_optional_tensor_list(self) -> bool:
        return self.remove_const_ref() == OPTIONAL_TENSOR_LIST


@dataclass(frozen=True)
class BaseCType(CType):
    """A named type (`at::Tensor`, `int64_t`).  Use the constants below: `view`
    is part of the value, so a type spelled anew without it would differ."""
    name: str
    view: bool = False

    def cpp_type(self) -> str:
        return self.name

    def remove_const_ref(self) -> CType:
        return self

    @property
    def is_view(self) -> bool:
        return self.view


@dataclass(frozen=True)
class _Wrapping(CType):
    """A type made of one other type: a reference to it, a template of it."""
    elem: CType

    # (class constants, not fields)
    _spelling: ClassVar[str] = "{}"    # `{}` stands for the element's spelling
    _is_ref: ClassVar[bool] = False    # a const or mutable reference: remove_const_ref() drops it
    _views: ClassVar[Optional[bool]] = None   # True: always a view; None: a view if the element is

    def cpp_type(self) -> str:
        return self._spelling.format(self.elem.cpp_type())

    def remove_const_ref(self) -> CType:
        e = self.elem.remove_const_ref()
        return e if self._is_ref else type(self)(e)

    @property
    def is_view(self) -> bool:
        return self.elem.is_view if self._views is None else self._views


@dataclass(frozen=True)
class ConstRefCType(_Wrapping):
    _spelling, _is_ref, _views = "const {} &", True, True


@dataclass(frozen=True)
class MutRefCType(_Wrapping):
    _spelling, _is_ref, _views = "{} &", True, True


@dataclass(frozen=True)
class ArrayRefCType(_Wrapping):
    """`at::ArrayRef<T>`: a view of someone else's array."""
    _spelling, _views = "at::ArrayRef<{}>", True


@dataclass(frozen=True)
class OptionalCType(_Wrapping):
    _spelling = "::std::optional<{}>"


@dataclass(frozen=True)
class VectorCType(_Wrapping):
    _spelling = "::std::vector<{}>"


@dataclass(frozen=True)
class ListCType(_Wrapping):
    """`c10::List<T>`, as `Tensor?[]` arguments are passed."""
    _spelling = "c10::List<{}>"


@dataclass(frozen=True)
class ArrayCType(CType):
    """`::std::array<T,N>`, as fixed-size `bool[N]` arguments are passed."""
    elem: CType
    size: int

    def cpp_type(self) -> str:
        return f"::std::array<{self.elem.cpp_type()},{self.size}>"

    def remove_const_ref(self) -> CType:
        return ArrayCType(self.elem.remove_const_ref(), self.size)

    @property
    def is_view(self) -> bool:
        return self.elem.is_view


# The named types.  The schema's base types:
tensorT, scalarT = BaseCType("at::Tensor"), BaseCType("at::Scalar")
stringViewT = BaseCType("c10::string_view", view=True)
longT, doubleT, boolT = BaseCType("int64_t"), BaseCType("double"), BaseCType("bool")
symIntT, symBoolT = BaseCType("c10::SymInt"), BaseCType("c10::SymBool")
scalarTypeT, layoutT = BaseCType("at::ScalarType"), BaseCType("at::Layout")
memoryFormatT, qschemeT = BaseCType("at::MemoryFormat"), BaseCType("at::QScheme")
deviceT, deviceIndexT = BaseCType("at::Device"), BaseCType("at::DeviceIndex")
generatorT, storageT, streamT = BaseCType("at::Generator"), BaseCType("at::Storage"), BaseCType("at::Stream")
dimVectorT, graphModuleT = BaseCType("at::DimVector"), BaseCType("at::GraphModule")
# Views the C++ API passes lists as.
tensorListT, iTensorListRefT = BaseCType("at::TensorList", view=True), BaseCType("at::ITensorListRef", view=True)
intArrayRefT = BaseCType("at::IntArrayRef", view=True)
symIntArrayRefT = BaseCType("c10::SymIntArrayRef", view=True)
optionalIntArrayRefT = BaseCType("at::OptionalIntArrayRef", view=True)
optionalSymIntArrayRefT = BaseCType("at::OptionalSymIntArrayRef", view=True)
# Not schema types: the packed options, and what formulas save of a tensor
# (TypeAndSize spelled as torch's generated code sees it; emit/functions/saved.py
# stores it under its torch::autograd name).
tensorOptionsT, tensorGeometryT = BaseCType("at::TensorOptions"), BaseCType("at::TensorGeometry")
typeAndSizeT = BaseCType("torch::autograd::generated::TypeAndSize")

OPTIONAL_TENSOR = OptionalCType(tensorT)
OPTIONAL_TENSOR_LIST = ListCType(OPTIONAL_TENSOR)
_TENSORS = frozenset({tensorT, OPTIONAL_TENSOR})
_TENSOR_LISTS = frozenset({tensorListT, iTensorListRefT, VectorCType(tensorT), OPTIONAL_TENSOR_LIST})

# The schema's base types (model.BASE_TYPES) but Tensor and Scalar, passed by
# value and returned as such.
_BY_VALUE: dict[str, CType] = {
    "Generator": generatorT, "ScalarType": scalarTypeT, "int": longT, "DimVector": dimVectorT,
    "float": doubleT, "str": stringViewT, "bool": boolT, "Layout": layoutT, "Device": deviceT,
    "DeviceIndex": deviceIndexT, "MemoryFormat": memoryFormatT, "QScheme": qschemeT,
    "Storage": storageT, "Stream": streamT, "SymInt": symIntT, "SymBool": symBoolT,
    "GraphModule": graphModuleT,
}


def _value_type(t: Type) -> Optional[CType]:
    """Types passed by value, identical as argument and return; None otherwise."""
    if isinstance(t, BaseType):
        if t.name in ("Tensor", "Scalar"):
            return None
        return _BY_VALUE[t.name]
    if isinstance(t, OptionalType):
        e = _value_type(t.elem)
        return None if e is None else OptionalCType(e)
    if isinstance(t, ListType):
        if str(t.elem) == "bool":
            if t.size is None:
                raise FormulaError("a bool[] list needs a fixed size")
            return ArrayCType(boolT, t.size)
        return None
    if isinstance(t, CustomClassType):
        raise FormulaError(f"custom class type '{t}' has no C++ autograd spelling")
    raise AssertionError(t)


def argument_type(t: Type, *, mutable: bool, const_ref_for_mutable: bool = False,
                  ilistref: bool = False) -> CType:
    v = _value_type(t)
    if v is not None:
        return v
    mut_ref = mutable and not const_ref_for_mutable
    if isinstance(t, BaseType):
        if t.name == "Tensor":
            return MutRefCType(tensorT) if mut_ref else ConstRefCType(tensorT)
        return ConstRefCType(scalarT)
    if isinstance(t, OptionalType):
        e = str(t.elem)
        if e == "Tensor":
            # A mutable optional tensor is passed as a plain mutable Tensor.
            return MutRefCType(tensorT) if mut_ref else ConstRefCType(OPTIONAL_TENSOR)
        if e == "Scalar":
            return ConstRefCType(OptionalCType(scalarT))
        if isinstance(t.elem, ListType) and str(t.elem.elem) == "int":
            return optionalIntArrayRefT
        if isinstance(t.elem, ListType) and str(t.elem.elem) == "SymInt":
            return optionalSymIntArrayRefT
        return OptionalCType(argument_type(t.elem, mutable=mutable, const_ref_for_mutable=const_ref_for_mutable,
                                           ilistref=ilistref))
    if isinstance(t, ListType):
        e = str(t.elem)
        if e == "int":
            return intArrayRefT
        if e == "SymInt":
            return symIntArrayRefT
        if e == "Tensor":
            return ConstRefCType(iTensorListRefT) if ilistref else tensorListT
        if e == "Scalar":
            return ArrayRefCType(scalarT)
        if e == "Tensor?":
            return ConstRefCType(OPTIONAL_TENSOR_LIST)
        return ArrayRefCType(argument_type(t.elem, mutable=mutable, const_ref_for_mutable=const_ref_for_mutable,
                                           ilistref=ilistref))
    raise AssertionError(t)


def return_type(r: Return, *, const_ref_for_mutable: bool = False) -> CType:
    return _return_type(r.type, r.is_write, const_ref_for_mutable)


def _return_type(t: Type, mutable: bool, cref: bool) -> CType:
    v = _value_type(t)
    if v is not None:
        return v
    if isinstance(t, BaseType):
        if t.name == "Tensor":
            if mutable:
                return ConstRefCType(tensorT) if cref else MutRefCType(tensorT)
            return tensorT
        return scalarT
    if isinstance(t, ListType):
        if mutable:
            raise FormulaError("a function cannot return a mutable tensor list")
        if t.size is not None:
            raise FormulaError(f"fixed-size list return '{t}' is not supported")
        return VectorCType(_return_type(t.elem, False, cref))
    if isinstance(t, OptionalType) and str(t.elem) == "Tensor":
        return OptionalCType(_return_type(t.elem, mutable, cref))
    raise FormulaError(f"unsupported return type '{t}'")


@dataclass(frozen=True)
class Binding:
    """One parameter of a function's C++ API signature."""
    name: str                 # the C++ parameter name
    saved_name: str           # the name saved attributes derive from (differs only
                              # for memory_format next to TensorOptions)
    ctype: CType
    argument: Optional[Argument]   # None for the packed TensorOptions

    @property
    def type(self) -> str:
        return self.ctype.cpp_type()


def cpp_arguments(func: FunctionSchema, *, const_ref_for_mutable: bool = False,
                  ilistref: bool = False) -> list[Binding]:
    """The C++ API signature (not the faithful one): out arguments first, and
    dtype/layout/device/pin_memory packed into one `options`."""
    a = func.arguments
    ti = a.tensor_options_index
    out: list[Binding] = []

    def bind(arg: Argument) -> Binding:
        ct = argument_type(arg.type, mutable=arg.is_write, const_ref_for_mutable=const_ref_for_mutable,
                           ilistref=ilistref)
        saved = "possibly_redundant_memory_format" if (arg.name == "memory_format" and ti is not None) \
            else arg.name
        return Binding(arg.name, saved, ct, arg)

    out += [bind(x) for x in a.out]
    out += [bind(x) for x in a.positional]
    for i, x in enumerate(a.kwarg_only):
        if ti is not None and ti <= i < ti + 4:
            if i == ti:
                out.append(Binding("options", "options", tensorOptionsT, None))
            continue
        out.append(bind(x))
    return out


def return_names(func: FunctionSchema, fallback: str = "result") -> list[str]:
    names = []
    arg_names = {a.name for a in func.schema_order_arguments()}
    for i, r in enumerate(func.returns):
        if func.name.inplace:
            if i != 0:
                raise FormulaError("an in-place function has a single return")
            names.append("self")
        elif func.is_out_fn():
            names.append(func.arguments.out[i].name)
        elif r.name:
            names.append(f"{r.name}_return" if r.name in arg_names else r.name)
        else:
            names.append(fallback if len(func.returns) == 1 else f"{fallback}{i}")
    return names


def api_name(func: FunctionSchema) -> str:
    """The C++ function name (`add_`, `add_out`)."""
    return func.name.name + ("_out" if func.is_out_fn() else "")

