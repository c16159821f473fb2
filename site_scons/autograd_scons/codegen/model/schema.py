"""The schema language of native_functions.yaml, as frozen dataclasses.

`FunctionSchema.parse(s)` reads a `func:` string; `str()` of the result gives
the same string back (the parser checks this, so any spelling it would not
reproduce is rejected rather than silently normalised).  Its parts (types,
arguments, returns, names) are in schema_parts.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Iterator

# The parts, also importable from here: schema.py is the schema language's one name.
from .schema_parts import (BASE_TYPES, Annotation, Argument, Arguments, BaseType,  # noqa: F401
                           CustomClassType, ListType, OptionalType, Return, SchemaError, Type,
                           check_name, is_symint_like, is_tensor_like, matched, parse_type)


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
        check_name(name, "operator name")
        if overload:
            # Overload names are only ever part of longer C++ names (`add_Tensor`).
            check_name(overload, "overload name", cxx=False)
            if overload == "default" or overload.startswith("__"):
                raise SchemaError(f"overload name '{overload}' is reserved by torch "
                                  "('default' and names starting with '__')")
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
        m = matched(_DECL_RE.fullmatch(func), f"not a schema of the form 'name(args) -> returns': '{func}'")
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
        return self._signature_text(_view_base(self.name.base))

    def _signature_text(self, base: str) -> str:
        if str(self.name) == "bernoulli.p":
            return str(self.signature(strip_view_copy_name=base != self.name.base))
        kw = self._signature_kwargs()
        parts = [x.unannotated for x in self.arguments.positional]
        if kw:
            parts.append("*")
            parts += [x.unannotated for x in kw]
        rets = [str(r.type) for r in self.returns] + [str(x.type) for x in self._unreturned_writes()]
        name = f"__{base}__" if self.name.dunder else base
        ret = rets[0] if len(rets) == 1 else "(" + ", ".join(rets) + ")"
        return f"{name}({', '.join(parts)}) -> {ret}"

    def _signature_kwargs(self) -> tuple[Argument, ...]:
        """Keyword-only arguments without the four TensorOptions ones."""
        kw, ti = self.arguments.kwarg_only, self.arguments.tensor_options_index
        return kw if ti is None else kw[:ti] + kw[ti + 4:]

    def _unreturned_writes(self) -> list[Argument]:
        """Mutated inputs no return aliases: the signature returns them too."""
        a = self.arguments
        return [x for x in ((a.self_arg,) if a.self_arg else ()) + a.out + a.post_self_positional
                if x.is_write and not any(x.annotation == r.annotation for r in self.returns)]

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
        base = _view_base(self.name.base) if strip_view_copy_name else self.name.base
        extra = tuple(Return(f"{a.name}_out" if keep_return_names else None, a.type, None)
                      for a in self._unreturned_writes())
        rets = tuple(Return(r.name if keep_return_names else None, r.type, None)
                     for r in self.returns) + extra
        strip = lambda a: Argument(a.name, a.type, a.default, None)  # noqa: E731
        sig_args = Arguments(tuple(map(strip, self.arguments.positional)),
                             tuple(map(strip, self._signature_kwargs())), ())
        if str(self.name) == "bernoulli.p":
            # bernoulli.p differs from its variants only by this default.
            sig_args = Arguments.parse(str(sig_args).replace("float p", "float p=0.5"))
        return FunctionSchema(OperatorName(base, False, self.name.dunder), sig_args, rets)

    def with_name(self, name: OperatorName) -> "FunctionSchema":
        return replace(self, name=name)


def _view_base(base: str) -> str:
    """The base name a `{view}_copy` (or `{x}_scatter`) pairs with."""
    if base.endswith("_copy"):
        return base.replace("_copy", "")
    if base.endswith("_scatter"):
        return base.replace("scatter", "inverse")
    return base


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
