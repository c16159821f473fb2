"""The records native_functions.yaml becomes (parsing is parse/native_functions.py):
what derivative matching and the emitters need to know of a native function,
and of an extension's op, its hand-written kernels (`dispatch:`), its
view declaration (`view:`) and its transforms (`autocast:`, `vmap:`),
checked and located when parsed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

from .schema import FunctionSchema
from .transforms import Autocast, Fake, Vmap
from ..tree import op_file

# Dispatch keys that mean "implemented by decomposition" (no backend kernel).
_CIA = "CompositeImplicitAutograd"
_CIA_NESTED = "CompositeImplicitAutogradNestedTensor"


@dataclass(frozen=True)
class Dispatch:
    """`dispatch:` of an extension's op: the kernels the extension writes by
    hand in `<ns>::native`, each registered under its dispatch key."""
    kernels: tuple[tuple[str, str], ...]   # (dispatch key, kernel name), in yaml order
    key_lines: tuple[int, ...]             # the yaml line of each kernel's key
    line: int                              # the line of `dispatch:`

    @property
    def implicit(self) -> bool:
        return any(k == _CIA for k, _ in self.kernels)

    def names(self) -> list[str]:
        return list(dict.fromkeys(n for _, n in self.kernels))


@dataclass(frozen=True)
class Held:
    """A view op's argument other than its base, held past the call (for replay)."""
    name: str
    cpp: str       # the type held
    vec: bool      # held from an IntArrayRef

    @property
    def owned(self) -> str:
        """The argument as the held type (in the kernels, where it is a parameter)."""
        return f"{self.name}.vec()" if self.vec else self.name


@dataclass(frozen=True)
class View:
    """`view:` of an extension's op whose output is a view of its first argument."""
    inverse: str              # the hand-written inverse, in <ns>::native
    whole_input: bool         # the view covers its whole input: the inverse is a view
    is_list: bool             # `Tensor(a)[]`: one view per element
    base: str                 # the argument the outputs alias (the first)
    args: tuple[Held, ...]    # the other arguments
    line: int                 # the line of `view:`


@dataclass(frozen=True)
class NativeFunction:
    func: FunctionSchema
    namespace: str
    file: str
    line: int
    variants: frozenset[str] = frozenset({"function"})
    use_const_ref_for_mutable_tensors: bool = False
    structured: bool = False
    structured_delegate: Optional[str] = None
    manual_cpp_binding: bool = False
    tags: frozenset[str] = frozenset()
    autogen: tuple[str, ...] = ()
    dispatch_keys: frozenset[str] = frozenset()
    generated: bool = False
    # An extension's op (any namespace but aten): its checked `dispatch:`
    # (None: the hand-written code registers its kernels itself) and `view:`
    # (None: not a view op, or a CompositeImplicitAutograd one).
    dispatch: Optional[Dispatch] = None
    view: Optional[View] = None
    # Its `autocast:` and `vmap:` (model/transforms.py); None: no Autocast
    # kernel (inputs arrive as they are), functorch's fallback under vmap.
    autocast: Optional[Autocast] = None
    vmap: Optional[Vmap] = None
    # Its `fake:` (model/transforms.py), for the stable target's fake kernel.
    fake: Optional[Fake] = None
    # The raw yaml entry (for cache keys); empty for derived functions.
    raw: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def part_of_structured_group(self) -> bool:
        return self.structured or self.structured_delegate is not None

    @property
    def has_composite_implicit_autograd_kernel(self) -> bool:
        return _CIA in self.dispatch_keys

    @property
    def returns_view(self) -> bool:
        """An output aliases an input without writing it (`Tensor(a)`, `Tensor(a)[]`)."""
        return any(r.annotation is not None and not r.annotation.is_write for r in self.func.returns)

    @cached_property
    def is_view_op(self) -> bool:
        if self.returns_view:
            return True
        if "inplace_view" in self.tags and str(self.func.name) not in ("resize_", "resize_as_"):
            return True
        return any(a.annotation is not None and "*" in a.annotation.alias_set_after
                   for a in self.func.schema_order_arguments())

    @property
    def view_kind(self) -> str:
        """'aliasing_inplace', 'aliasing' or 'non_aliasing'."""
        if self.is_view_op:
            return "aliasing_inplace" if self.func.name.inplace else "aliasing"
        return "non_aliasing"


@dataclass(frozen=True)
class ViewGroup:
    view: NativeFunction
    view_copy: Optional[NativeFunction]
    view_inplace: Optional[NativeFunction]

    def functions(self) -> list[NativeFunction]:
        return [f for f in (self.view, self.view_inplace, self.view_copy) if f is not None]


@dataclass
class NativeSpec:
    """Everything derivative matching needs from native_functions.yaml."""
    functions: list[NativeFunction]   # in yaml order, derived ones appended
    ordered: list[NativeFunction]     # grouped by view (the order matching sees)
    view_groups: list[ViewGroup]


class OpUnitNames:
    """What an op's unit of generation is named by (an extension op's
    KernelUnit, a patch's AtenKernel): its TU `ops/<ns>_<name>[_<overload>].cpp`
    and the op's qualified name, which the engine keys and reports it by (a
    Function's name never contains '::').  `overload_sep` goes between name
    and overload."""
    func: NativeFunction
    overload_sep: str

    @property
    def stem(self) -> str:
        n = self.func.func.name
        return f"{self.func.namespace}_{n.name}" + (f"{self.overload_sep}{n.overload}" if n.overload else "")

    @property
    def path(self) -> str:
        return op_file(self.stem, ".cpp")

    @property
    def op(self) -> str:
        return f"{self.func.namespace}::{self.func.func.name}"
