"""The schema language of native_functions.yaml, as frozen dataclasses.

`FunctionSchema.parse(s)` reads a `func:` string; `str()` of the result gives
the same string back (the parser checks this, so any spelling it would not
reproduce is rejected rather than silently normalised).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Iterator, Optional, Union


class SchemaError(ValueError):
    """A `func:` string (or part of one) that is not valid schema syntax."""


# Base types the schema language knows, and their C++ value type.
BASE_TYPES: dict[str, str] = {
    "Generator": "at::Generator",
    "ScalarType": "at::ScalarType",
    "Tensor": "at::Tensor",
    "int": "int64_t",
    "DimVector": "at::DimVector",
    "float": "double",
    "str": "c10::string_view",
    "bool": "bool",
    "Layout": "at::Layout",
    "Device": "at::Device",
    "DeviceIndex": "at::DeviceIndex",
    "Scalar": "at::Scalar",
    "MemoryFormat": "at::MemoryFormat",
    "QScheme": "at::QScheme",
    "Storage": "at::Storage",
    "Stream": "at::Stream",
    "SymInt": "c10::SymInt",
    "SymBool": "c10::SymBool",
    "GraphModule": "at::GraphModule",
}


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


def is_list_like(t: Type) -> bool:
    while isinstance(t, OptionalType):
        t = t.elem
    return isinstance(t, ListType)


# ---------------------------------------------------------- annotations

_ANNOTATION_RE = re.compile(r"^([a-z])(\|[a-z])*(!?)( -> (\*|[a-z](\|[a-z])*))?$")


@dataclass(frozen=True)
class Annotation:
    alias_set: tuple[str, ...]
    is_write: bool
    alias_set_after: tuple[str, ...]

    @staticmethod
    def parse(ann: str) -> "Annotation":
        m = _ANNOTATION_RE.match(ann)
        if m is None:
            raise SchemaError(f"bad alias annotation '{ann}'")
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


@dataclass(frozen=True)
class Argument:
    name: str
    type: Type
    default: Optional[str]
    annotation: Optional[Annotation]

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

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
        r = Argument(name, t, default, ann)
        if str(r) != arg:
            raise SchemaError(f"argument '{arg}' is not in canonical form (would be '{r}')")
        return r

    def __str__(self) -> str:
        return self._text

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
class Return:
    name: Optional[str]
    type: Type
    annotation: Optional[Annotation]

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    @staticmethod
    @lru_cache(maxsize=None)
    def parse(ret: str) -> "Return":
        if " " in ret:
            type_s, name = ret.rsplit(" ", 1)
        else:
            type_s, name = ret, None
        t, ann = _parse_annotated_type(type_s)
        r = Return(name, t, ann)
        if str(r) != ret:
            raise SchemaError(f"return '{ret}' is not in canonical form (would be '{r}')")
        return r

    def __str__(self) -> str:
        return self._text

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


# ----------------------------------------------------------- op names


@dataclass(frozen=True)
class OperatorName:
    base: str
    inplace: bool = False
    dunder: bool = False
    functional_overload: bool = False
    overload: str = ""

    @staticmethod
    @lru_cache(maxsize=None)
    def parse(s: str) -> "OperatorName":
        name, _, overload = s.partition(".")
        if not name:
            raise SchemaError("empty operator name")
        if not re.fullmatch(r"\w+", name) or (overload and not re.fullmatch(r"\w+", overload)):
            raise SchemaError(f"bad operator name '{s}'")
        if name.endswith("_out"):
            raise SchemaError(f"operator name '{name}' ends in the reserved '_out'")
        dunder = inplace = functional = False
        m = re.fullmatch(r"__([^_]+)__", name)
        if m:
            dunder = True
            base = m.group(1)
            if base in {"i" + n for n in _AUGMENTED}:
                inplace, base = True, base[1:]
        else:
            base = name
            if base.endswith("_"):
                inplace, base = True, base[:-1]
        if base.endswith("_functional"):
            if dunder or inplace:
                raise SchemaError(f"'{name}': a _functional name cannot be in-place or dunder")
            functional, base = True, base[: -len("_functional")]
        r = OperatorName(base, inplace, dunder, functional, overload)
        if str(r) != s:
            raise SchemaError(f"operator name '{s}' is not in canonical form")
        return r

    @property
    def name(self) -> str:
        """The name without overload: `add_`, `__iadd__`, `foo_functional`."""
        if self.dunder:
            return f"__{'i' if self.inplace else ''}{self.base}__"
        return self.base + ("_" if self.inplace else "_functional" if self.functional_overload else "")

    def __str__(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name


_AUGMENTED = ("add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or")


# -------------------------------------------------------------- schema

FUNCTIONAL, INPLACE, OUT, MUTABLE, SCRATCH = "functional", "inplace", "out", "mutable", "scratch"

_DECL_RE = re.compile(r"([^\(]+)\((.*)\) -> (.*)")


@dataclass(frozen=True)
class FunctionSchema:
    name: OperatorName
    arguments: Arguments
    returns: tuple[Return, ...]

    @staticmethod
    def parse(func: str) -> "FunctionSchema":
        m = _DECL_RE.fullmatch(func)
        if m is None:
            raise SchemaError(f"not a schema of the form 'name(args) -> returns': '{func}'")
        name = OperatorName.parse(m.group(1))
        args = Arguments.parse(m.group(2))
        returns = _parse_returns(m.group(3))
        r = FunctionSchema(name, args, returns)
        if str(r) != func:
            raise SchemaError(f"schema is not in canonical form: '{func}' would read back as '{r}'")
        r._check()
        return r

    def __str__(self) -> str:
        return self._text

    @cached_property
    def _text(self) -> str:
        rets = str(self.returns[0]) if len(self.returns) == 1 else \
            "(" + ", ".join(map(str, self.returns)) + ")"
        return f"{self.name}({self.arguments}) -> {rets}"

    @cached_property
    def signature_key(self) -> str:
        """`str(self.signature())`, equal for all variants of one operator
        (built directly: grouping computes it for every function)."""
        return self._signature_text(self.name.base)

    @cached_property
    def view_signature_key(self) -> str:
        """Like signature_key, but `x_copy` pairs with its view `x`."""
        base = self.name.base
        if base.endswith("_copy"):
            base = base.replace("_copy", "")
        elif base.endswith("_scatter"):
            base = base.replace("scatter", "inverse")
        return self._signature_text(base)

    def _signature_text(self, base: str) -> str:
        if str(self.name) == "bernoulli.p":
            return str(self.signature(strip_view_copy_name=base != self.name.base))
        a = self.arguments
        kw = a.kwarg_only
        ti = a.tensor_options_index
        if ti is not None:
            kw = kw[:ti] + kw[ti + 4:]
        parts = [x.unannotated for x in a.positional]
        if kw:
            parts.append("*")
            parts += [x.unannotated for x in kw]
        self_a = a.self_arg
        rets = [str(r.type) for r in self.returns]
        rets += [str(x.type) for x in ((self_a,) if self_a else ()) + a.out + a.post_self_positional
                 if x.is_write and not any(x.annotation == r.annotation for r in self.returns)]
        name = f"__{base}__" if self.name.dunder else base
        ret = rets[0] if len(rets) == 1 else "(" + ", ".join(rets) + ")"
        return f"{name}({', '.join(parts)}) -> {ret}"

    def _check(self) -> None:
        # The structural rules that grouping and C++ naming rely on.
        for a, r in zip(self.arguments.out, self.returns):
            if a.annotation != r.annotation:
                raise SchemaError("the i-th out argument must match the i-th return's alias annotation")
        mutable_rets = [r for r in self.returns if r.is_write]
        if mutable_rets and len(mutable_rets) != len(self.returns):
            raise SchemaError("returns must be all mutable or all immutable")
        self_a = self.arguments.self_arg
        for r in mutable_rets:
            owners = list(self.arguments.out) + ([self_a] if self_a else [])
            if not any(r.annotation == a.annotation for a in owners):
                raise SchemaError("a mutable return must alias an out argument or self")
        if self.name.inplace:
            if not (self_a and self_a.is_write):
                raise SchemaError(f"in-place op '{self.name}' needs a mutable 'self' argument")
            # ATen's in-place ops return self; custom ops in PyTorch 2's style
            # return nothing (torch.compile cannot functionalize an aliasing output).
            if self_a.type == BaseType("Tensor") and self.returns and not (
                    len(self.returns) == 1 and self.returns[0].annotation == self_a.annotation):
                raise SchemaError(f"in-place op '{self.name}' must return self (or nothing: '-> ()')")
            if self.arguments.out:
                raise SchemaError(f"'{self.name}' cannot be both in-place and out=")
        if "functional" in self.name.overload and self.kind() != FUNCTIONAL:
            raise SchemaError("overload names containing 'functional' are reserved for functional ops")
        for a in self.arguments.positional[: self.arguments.self_index or 0]:
            if a.is_write:
                raise SchemaError(f"mutable argument '{a.name}' before self is not supported")
        names = [a.name for a in self.arguments.flat_all]
        if len(set(names)) != len(names):
            raise SchemaError("two arguments share a name")

    # Schema classification -------------------------------------------------

    def kind(self) -> str:
        return self._kind

    @cached_property
    def _kind(self) -> str:
        if self.name.inplace:
            return INPLACE
        if any(a.name.startswith("_scratch_") for a in self.arguments.out):
            return SCRATCH
        if self.arguments.out:
            return OUT
        if any(a.is_write for a in self.arguments.post_self_positional):
            return MUTABLE
        return FUNCTIONAL

    def is_out_fn(self) -> bool:
        return bool(self.arguments.out)

    def is_functional_fn(self) -> bool:
        return "functional" in self.name.overload

    def has_symint(self) -> bool:
        return any(is_symint_like(a.type) for a in self.arguments.flat_non_out)

    def schema_order_arguments(self) -> tuple[Argument, ...]:
        return self.arguments.flat_all

    def signature(self, *, strip_view_copy_name: bool = False,
                  keep_return_names: bool = False) -> "FunctionSchema":
        """The schema shared by the functional/in-place/out/mutable variants of
        one operator: no overload, no out args, no alias annotations, no
        TensorOptions, and mutated inputs turned into trailing returns."""
        base = self.name.base
        if strip_view_copy_name:
            if base.endswith("_copy"):
                base = base.replace("_copy", "")
            elif base.endswith("_scatter"):
                base = base.replace("scatter", "inverse")
        args = self.arguments
        self_a = args.self_arg
        extra = tuple(
            Return(f"{a.name}_out" if keep_return_names else None, a.type, None)
            for a in ((self_a,) if self_a else ()) + args.out + args.post_self_positional
            if a.is_write and not any(a.annotation == r.annotation for r in self.returns))
        rets = tuple(Return(r.name if keep_return_names else None, r.type, None)
                     for r in self.returns) + extra
        strip = lambda a: Argument(a.name, a.type, a.default, None)  # noqa: E731
        kw = args.kwarg_only
        ti = args.tensor_options_index
        if ti is not None:
            kw = kw[:ti] + kw[ti + 4:]
        sig_args = Arguments(tuple(map(strip, args.positional)), tuple(map(strip, kw)), ())
        if str(self.name) == "bernoulli.p":
            # bernoulli.p differs from its variants only by this default.
            sig_args = Arguments.parse(str(sig_args).replace("float p", "float p=0.5"))
        return FunctionSchema(OperatorName(base, False, self.name.dunder), sig_args, rets)

    def with_name(self, name: OperatorName) -> "FunctionSchema":
        return replace(self, name=name)


def _parse_returns(decl: str) -> tuple[Return, ...]:
    if decl == "()":
        return ()
    if decl.startswith("(") and decl.endswith(")"):
        decl = decl[1:-1]
    return tuple(Return.parse(r) for r in decl.split(", "))


def iter_types(t: Type) -> Iterator[Type]:
    yield t
    if isinstance(t, (OptionalType, ListType)):
        yield from iter_types(t.elem)
