"""The parts of a schema: names, types, alias annotations, arguments and
returns (the schema itself is schema.py's `FunctionSchema`).  Each `parse`
checks that `str()` gives the text back, so any spelling it would not
reproduce is rejected rather than silently normalised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Optional, Union

from autograd_scons.base.errors import Error


class SchemaError(Error, ValueError):
    """A `func:` string (or part of one) that is not valid schema syntax."""


def matched(m: Optional[re.Match], message: str) -> re.Match:
    """`m`, a regex match of some schema text, or a SchemaError if it did not match."""
    if m is None:
        raise SchemaError(message)
    return m


# Base types the schema language knows (model/cpp.py has their C++ types).
BASE_TYPES: frozenset[str] = frozenset({
    "Generator", "ScalarType", "Tensor", "int", "DimVector", "float", "str", "bool", "Layout",
    "Device", "DeviceIndex", "Scalar", "MemoryFormat", "QScheme", "Storage", "Stream", "SymInt",
    "SymBool", "GraphModule",
})


# ---------------------------------------------------------------- names

# Names become C++ identifiers in the generated code, so they are held to
# what torch's schema parser takes (an ASCII identifier that is not one of
# its keywords; `\w` would admit any Unicode letter) and are not C++ keywords.
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCHEMA_KEYWORDS = frozenset(
    "Ellipsis False None True and as assert break class continue def del elif else for global "
    "if import in is not or pass raise return while with".split())
_CXX_KEYWORDS = frozenset(
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t "
    "char32_t class compl concept const consteval constexpr constinit const_cast continue co_await "
    "co_return co_yield decltype default delete do double dynamic_cast else enum explicit export "
    "extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq "
    "nullptr operator or or_eq private protected public register reinterpret_cast requires return "
    "short signed sizeof static static_assert static_cast struct switch template this thread_local "
    "throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while "
    "xor xor_eq".split())


def check_name(name: str, what: str, cxx: bool = True) -> None:
    """Raise SchemaError unless `name` is usable as the `what` of a schema
    (`cxx`: also as a C++ identifier as it stands)."""
    if not _IDENT_RE.fullmatch(name):
        raise SchemaError(f"{what} '{name}' is not an identifier (ASCII letters, digits and '_', "
                          "not starting with a digit)")
    if name in _SCHEMA_KEYWORDS:
        raise SchemaError(f"{what} '{name}' is a keyword of the schema language")
    if cxx and name in _CXX_KEYWORDS:
        raise SchemaError(f"{what} '{name}' is a C++ keyword")


# ---------------------------------------------------------------- types


@dataclass(frozen=True)
class BaseType:
    name: str

    def __str__(self) -> str:
        return self.name

    def base(self) -> str:
        return self.name


@dataclass(frozen=True)
class CustomClassType:
    class_name: str

    def __str__(self) -> str:
        return f"__torch__.torch.classes.{self.class_name}"

    def base(self) -> str:
        return ""


@dataclass(frozen=True)
class OptionalType:
    elem: "Type"

    def __str__(self) -> str:
        return f"{self.elem}?"

    def base(self) -> str:
        return self.elem.base()


@dataclass(frozen=True)
class ListType:
    elem: "Type"
    size: Optional[int]

    def __str__(self) -> str:
        return f"{self.elem}[{self.size or ''}]"

    def base(self) -> str:
        return self.elem.base()


Type = Union[BaseType, CustomClassType, OptionalType, ListType]

_LIST_RE = re.compile(r"^(.+)\[([0-9]+)?\]$")


@lru_cache(maxsize=None)
def parse_type(t: str) -> Type:
    r = _parse_type(t)
    if str(r) != t:
        raise SchemaError(f"type '{t}' is not in canonical form (would be '{r}')")
    return r


def _parse_type(t: str) -> Type:
    if t.endswith("?"):
        return OptionalType(parse_type(t[:-1]))
    m = _LIST_RE.match(t)
    if m:
        return ListType(parse_type(m.group(1)), int(m.group(2)) if m.group(2) else None)
    if t.startswith("__torch__.torch.classes."):
        name = t[len("__torch__.torch.classes."):]
        if re.fullmatch(r"[a-zA-Z0-9_.]+", name):
            return CustomClassType(name)
    if t in BASE_TYPES:
        return BaseType(t)
    raise SchemaError(f"unknown type '{t}'")


def is_tensor_like(t: Type) -> bool:
    return t.base() == "Tensor"


def is_symint_like(t: Type) -> bool:
    return t.base() == "SymInt"


# ---------------------------------------------------------- annotations

_ANNOTATION_RE = re.compile(r"^([a-z])(\|[a-z])*(!?)( -> (\*|[a-z](\|[a-z])*))?$")


@dataclass(frozen=True)
class Annotation:
    alias_set: tuple[str, ...]
    is_write: bool
    alias_set_after: tuple[str, ...]

    @staticmethod
    def parse(ann: str) -> "Annotation":
        m = matched(_ANNOTATION_RE.match(ann), f"bad alias annotation '{ann}'")
        before = m.group(1) + (m.group(2) or "")
        alias_set = tuple(before.split("|"))
        is_write = m.group(3) == "!"
        if is_write and len(alias_set) > 1:
            raise SchemaError(f"a mutable alias annotation names one set: '{ann}'")
        after = tuple(m.group(5).split("|")) if m.group(5) else ()
        r = Annotation(alias_set, is_write, after)
        if str(r) != ann:
            raise SchemaError(f"alias annotation '{ann}' is not in canonical form")
        return r

    def __str__(self) -> str:
        s = "|".join(self.alias_set) + ("!" if self.is_write else "")
        if self.alias_set_after:
            s += " -> " + "|".join(self.alias_set_after)
        return s


_ANNOTATED_TENSOR_RE = re.compile(r"Tensor\((.+)\)(.*)")


def _parse_annotated_type(s: str) -> tuple[Type, Optional[Annotation]]:
    m = _ANNOTATED_TENSOR_RE.match(s)
    if not m:
        return parse_type(s), None
    if m.group(2) not in ("", "?", "[]"):
        raise SchemaError(f"unsupported annotated type '{s}'")
    return parse_type("Tensor" + m.group(2)), Annotation.parse(m.group(1))


def _annotated_type_str(t: Type, ann: Optional[Annotation]) -> str:
    s = str(t)
    if ann is not None:
        if s not in ("Tensor", "Tensor?", "Tensor[]"):
            raise SchemaError(f"alias annotation on non-Tensor type '{s}'")
        s = s.replace("Tensor", f"Tensor({ann})")
    return s


# ------------------------------------------------------- args & returns


class _Annotated:
    """What arguments and returns share: an alias annotation, canonical text."""
    annotation: Optional["Annotation"]   # (a field of the dataclasses below)

    @property
    def _text(self) -> str:   # (each dataclass below: its canonical text)
        raise NotImplementedError

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    def __str__(self) -> str:
        return self._text

    def canonical(self, text: str, what: str):
        """self, if it spells `text` back exactly."""
        if str(self) != text:
            raise SchemaError(f"{what} '{text}' is not in canonical form (would be '{self}')")
        return self


@dataclass(frozen=True)
class Argument(_Annotated):
    name: str
    type: Type
    default: Optional[str]
    annotation: Optional[Annotation]

    @staticmethod
    @lru_cache(maxsize=None)
    def parse(arg: str) -> "Argument":
        if " " not in arg:
            raise SchemaError(f"argument '{arg}' has no name")
        if "=" in arg:
            if arg.count("=") != 1:
                raise SchemaError(f"argument '{arg}' has more than one '='")
            type_and_name, default = arg.split("=")
            type_s, name = type_and_name.rsplit(" ", 1)
        else:
            type_s, name = arg.rsplit(" ", 1)
            default = None
        t, ann = _parse_annotated_type(type_s)
        check_name(name, "argument name")
        return Argument(name, t, default, ann).canonical(arg, "argument")

    @cached_property
    def _text(self) -> str:
        d = f"={self.default}" if self.default else ""
        return f"{_annotated_type_str(self.type, self.annotation)} {self.name}{d}"

    @cached_property
    def unannotated(self) -> str:
        """The argument as written without its alias annotation."""
        d = f"={self.default}" if self.default else ""
        return f"{self.type} {self.name}{d}"


@dataclass(frozen=True)
class Return(_Annotated):
    name: Optional[str]
    type: Type
    annotation: Optional[Annotation]

    @staticmethod
    @lru_cache(maxsize=None)
    def parse(ret: str) -> "Return":
        if " " in ret:
            type_s, name = ret.rsplit(" ", 1)
        else:
            type_s, name = ret, None
        t, ann = _parse_annotated_type(type_s)
        if name is not None:
            check_name(name, "return name")
        return Return(name, t, ann).canonical(ret, "return")

    @cached_property
    def _text(self) -> str:
        s = _annotated_type_str(self.type, self.annotation)
        return s if self.name is None else f"{s} {self.name}"


# The four kwarg-only arguments C++ packs into one TensorOptions, in order.
_TENSOR_OPTIONS = (("dtype", "ScalarType"), ("layout", "Layout"),
                   ("device", "Device"), ("pin_memory", "bool"))


def _is_options_arg(a: Argument, name: str, base: str) -> bool:
    return a.name == name and str(a.type) in (base, base + "?")


@dataclass(frozen=True)
class Arguments:
    positional: tuple[Argument, ...]
    kwarg_only: tuple[Argument, ...]   # without out arguments
    out: tuple[Argument, ...]          # mutable kwarg-only arguments

    @staticmethod
    def parse(args: str) -> "Arguments":
        positional: list[Argument] = []
        kwarg_only: list[Argument] = []
        out: list[Argument] = []
        acc = positional
        for a in args.split(", "):
            if not a:
                continue
            if a == "*":
                if acc is not positional:
                    raise SchemaError("'*' may occur only once")
                acc = kwarg_only
                continue
            p = Argument.parse(a)
            if p.is_write:
                if acc is kwarg_only:
                    acc = out
            elif acc is out:
                raise SchemaError(f"non-mutable argument '{p.name}' follows out arguments")
            acc.append(p)
        return Arguments(tuple(positional), tuple(kwarg_only), tuple(out))

    def __str__(self) -> str:
        parts = [str(a) for a in self.positional]
        if self.kwarg_only or self.out:
            parts.append("*")
        parts += [str(a) for a in self.kwarg_only]
        parts += [str(a) for a in self.out]
        return ", ".join(parts)

    @property
    def self_index(self) -> Optional[int]:
        for i, a in enumerate(self.positional):
            if a.name == "self":
                return i
        return None

    @property
    def self_arg(self) -> Optional[Argument]:
        i = self.self_index
        return None if i is None else self.positional[i]

    @property
    def post_self_positional(self) -> tuple[Argument, ...]:
        i = self.self_index
        return self.positional if i is None else self.positional[i + 1:]

    @property
    def tensor_options_index(self) -> Optional[int]:
        """Where dtype/layout/device/pin_memory start in kwarg_only, if present."""
        kw = self.kwarg_only
        for i in range(len(kw) - 3):
            if all(_is_options_arg(kw[i + j], n, b) for j, (n, b) in enumerate(_TENSOR_OPTIONS)):
                return i
        return None

    @property
    def flat_non_out(self) -> tuple[Argument, ...]:
        return self.positional + self.kwarg_only

    @property
    def flat_all(self) -> tuple[Argument, ...]:
        return self.positional + self.kwarg_only + self.out
