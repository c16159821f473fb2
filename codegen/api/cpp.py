"""How schema arguments and returns are spelled in libtorch's C++ API.

Each mapping returns a `CType`: the type as a C++ parameter is declared
(`const at::Tensor &`) and the same type with const and references removed
(`at::Tensor`), which is how a saved copy of it is held.  SymInts keep their
symbolic C++ types (the `_symint` API), as the autograd codegen uses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..model import (BASE_TYPES, Argument, BaseType, CustomClassType, FunctionSchema,
                     ListType, OptionalType, Return, Type)


@dataclass(frozen=True)
class CType:
    decl: str    # as a parameter: `const at::Tensor &`
    value: str   # const/ref removed: `at::Tensor`


def _same(s: str) -> CType:
    return CType(s, s)


def _const_ref(c: CType) -> CType:
    return CType(f"const {c.decl} &", c.value)


def _value_type(t: Type) -> Optional[CType]:
    """Types passed by value, identical as argument and return; None otherwise."""
    if isinstance(t, BaseType):
        if t.name in ("Tensor", "Scalar"):
            return None
        return _same(BASE_TYPES[t.name])
    if isinstance(t, OptionalType):
        e = _value_type(t.elem)
        return None if e is None else CType(f"::std::optional<{e.decl}>", f"::std::optional<{e.value}>")
    if isinstance(t, ListType):
        if str(t.elem) == "bool":
            if t.size is None:
                raise ValueError("a bool[] list needs a fixed size")
            return _same(f"::std::array<bool,{t.size}>")
        return None
    if isinstance(t, CustomClassType):
        raise ValueError(f"custom class type '{t}' has no C++ autograd spelling")
    raise AssertionError(t)


def argument_type(t: Type, *, mutable: bool, const_ref_for_mutable: bool = False,
                  ilistref: bool = False) -> CType:
    v = _value_type(t)
    if v is not None:
        return v
    mut_ref = mutable and not const_ref_for_mutable
    if isinstance(t, BaseType):
        if t.name == "Tensor":
            return CType("at::Tensor &", "at::Tensor") if mut_ref else _const_ref(_same("at::Tensor"))
        return _const_ref(_same("at::Scalar"))
    if isinstance(t, OptionalType):
        e = str(t.elem)
        if e == "Tensor":
            # A mutable optional tensor is passed as a plain mutable Tensor.
            return CType("at::Tensor &", "at::Tensor") if mut_ref else \
                _const_ref(_same("::std::optional<at::Tensor>"))
        if e == "Scalar":
            return _const_ref(_same("::std::optional<at::Scalar>"))
        if isinstance(t.elem, ListType) and str(t.elem.elem) == "int":
            return _same("at::OptionalIntArrayRef")
        if isinstance(t.elem, ListType) and str(t.elem.elem) == "SymInt":
            return _same("at::OptionalSymIntArrayRef")
        inner = argument_type(t.elem, mutable=mutable, const_ref_for_mutable=const_ref_for_mutable,
                              ilistref=ilistref)
        return CType(f"::std::optional<{inner.decl}>", f"::std::optional<{inner.value}>")
    if isinstance(t, ListType):
        e = str(t.elem)
        if e == "int":
            return _same("at::IntArrayRef")
        if e == "SymInt":
            return _same("c10::SymIntArrayRef")
        if e == "Tensor":
            return _const_ref(_same("at::ITensorListRef")) if ilistref else _same("at::TensorList")
        if e == "Scalar":
            return _same("at::ArrayRef<at::Scalar>")
        if e == "Tensor?":
            return _const_ref(_same("c10::List<::std::optional<at::Tensor>>"))
        inner = argument_type(t.elem, mutable=mutable, const_ref_for_mutable=const_ref_for_mutable,
                              ilistref=ilistref)
        return CType(f"at::ArrayRef<{inner.decl}>", f"at::ArrayRef<{inner.value}>")
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
                return _const_ref(_same("at::Tensor")) if cref else CType("at::Tensor &", "at::Tensor")
            return _same("at::Tensor")
        return _same("at::Scalar")
    if isinstance(t, ListType):
        if mutable:
            raise ValueError("a function cannot return a mutable tensor list")
        if t.size is not None:
            raise ValueError(f"fixed-size list return '{t}' is not supported")
        e = _return_type(t.elem, False, cref)
        return CType(f"::std::vector<{e.decl}>", f"::std::vector<{e.value}>")
    if isinstance(t, OptionalType) and str(t.elem) == "Tensor":
        e = _return_type(t.elem, mutable, cref)
        return CType(f"::std::optional<{e.decl}>", f"::std::optional<{e.value}>")
    raise ValueError(f"unsupported return type '{t}'")


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
        return self.ctype.decl


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
                out.append(Binding("options", "options", _same("at::TensorOptions"), None))
            continue
        out.append(bind(x))
    return out


def return_names(func: FunctionSchema, fallback: str = "result") -> list[str]:
    names = []
    arg_names = {a.name for a in func.schema_order_arguments()}
    for i, r in enumerate(func.returns):
        if func.name.inplace:
            if i != 0:
                raise ValueError("an in-place function has a single return")
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


TENSOR_LIST_LIKE = ("at::TensorList", "const c10::List<::std::optional<at::Tensor>> &",
                    "const at::ITensorListRef &")
