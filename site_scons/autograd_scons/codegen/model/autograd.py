"""The autograd data model: what one derivatives.yaml entry means for one
dispatch key, once matched to its native function."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from .schema import Type, is_tensor_like
from .native import NativeFunction
from .cpp import Binding, CType, return_names, return_type

IDENT = r"(^|\W){}($|\W)"


def uses_ident(formula: str, ident: str) -> bool:
    """Whether `ident` occurs in `formula` as a whole word (the loose word
    test of IDENT, PyTorch's codegen's, without compiling a regex per name)."""
    n = len(ident)
    i = formula.find(ident)
    while i >= 0:
        j = i + n
        if (i == 0 or not _is_word(formula[i - 1])) and (j == len(formula) or not _is_word(formula[j])):
            return True
        i = formula.find(ident, i + 1)
    return False


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


@dataclass(frozen=True)
class SavedAttribute:
    """A value stored on the autograd Function at forward time: an input or
    output, or a property of one (`other_scalar_type` for `other.scalar_type()`)."""
    name: str
    type: CType  # of the held value, const/ref removed
    expr: str    # how to compute it at save time

    def as_json(self) -> dict:
        return {"name": self.name, "type": self.type.cpp_type(), "expr": self.expr}


def unique_by_name(attrs: Iterable[SavedAttribute]) -> tuple[SavedAttribute, ...]:
    """The first attribute of each name, in order."""
    seen: dict[str, SavedAttribute] = {}
    for a in attrs:
        seen.setdefault(a.name, a)
    return tuple(seen.values())


@dataclass(frozen=True)
class Derivative:
    """A backward formula giving the gradient of one or more inputs."""
    formula: str                 # with saved attributes substituted
    original_formula: str
    var_names: tuple[str, ...]
    saved_inputs: tuple[SavedAttribute, ...]
    saved_outputs: tuple[SavedAttribute, ...]
    named_gradients: frozenset[str]   # `grad_<return>` names the formula uses
    # derivatives.yaml's line of the formula's key, for #line (never keyed:
    # the text names it through a macro of derivative_lines.h, see emit/lines.py)
    line: int = 0


@dataclass(frozen=True)
class ForwardDerivative:
    """A forward-mode formula for one or more outputs (`result: ...`)."""
    formula: str                 # auto_element_wise / auto_linear expanded
    var_names: tuple[str, ...]
    var_types: tuple[Type, ...]
    required_inputs_fw_grad: tuple[str, ...]
    required_inputs_primal: tuple[str, ...]
    line: int = 0   # as Derivative.line


@dataclass(frozen=True)
class DifferentiabilityInfo:
    name: str                    # base name of the entry (`mul`), `x_copy.` for view copies
    func: NativeFunction         # the canonical native function
    dispatch_key: str            # `Default` or an autograd dispatch key
    op: Optional[str]            # the autograd Function's class name, None if nothing is differentiable
    derivatives: tuple[Derivative, ...]
    forward_derivatives: tuple[ForwardDerivative, ...]
    all_saved_inputs: tuple[SavedAttribute, ...]
    all_saved_outputs: tuple[SavedAttribute, ...]
    available_named_gradients: tuple[str, ...]
    used_named_gradients: frozenset[str]
    args_with_derivatives: tuple[Binding, ...]
    non_differentiable_arg_names: tuple[str, ...]
    output_differentiability: Optional[tuple[bool, ...]]
    output_differentiability_conditions: Optional[tuple[str, ...]]
    # Where the entry is, for messages; the raw yaml entry, for cache keys.
    file: str = ""
    line: int = 0
    entry: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def function(self) -> str:
        """The Function's class name, for an info that has one (`op` set: the
        infos parse/extension_ops.py's function_infos keeps)."""
        if self.op is None:
            raise ValueError(f"info for '{self.func.func}' has no Function: nothing is differentiable")
        return self.op

    def uses(self, ident: str) -> bool:
        return any(uses_ident(d.formula, ident) for d in self.derivatives)

    @property
    def uses_retain_variables(self) -> bool:
        return self.uses("retain_variables")

    @property
    def uses_single_grad(self) -> bool:
        return self.uses("grad")

    def as_json(self) -> dict:
        sa = lambda xs: [x.as_json() for x in xs]  # noqa: E731
        return {
            "name": self.name,
            "func": str(self.func.func),
            "dispatch_key": self.dispatch_key,
            "op": self.op,
            "derivatives": [{"formula": d.formula, "var_names": list(d.var_names),
                             "saved_inputs": sa(d.saved_inputs), "saved_outputs": sa(d.saved_outputs)}
                            for d in self.derivatives],
            "forward_derivatives": [{"formula": f.formula, "var_names": list(f.var_names)}
                                    for f in self.forward_derivatives],
            "all_saved_inputs": sa(self.all_saved_inputs),
            "all_saved_outputs": sa(self.all_saved_outputs),
            "args_with_derivatives": [b.name for b in self.args_with_derivatives],
            "non_differentiable_arg_names": list(self.non_differentiable_arg_names),
            "output_differentiability": None if self.output_differentiability is None
            else list(self.output_differentiability),
        }


@dataclass(frozen=True)
class DifferentiableOutput:
    name: str
    type: Type
    cpp_type: str


def differentiable_outputs(info: DifferentiabilityInfo) -> list[DifferentiableOutput]:
    """Tensor-like returns, less those `output_differentiability` turns off."""
    f = info.func.func
    names = [n if n != "self" else "result" for n in return_names(f)]
    flags = info.output_differentiability or (True,) * len(f.returns)
    cref = info.func.use_const_ref_for_mutable_tensors
    outs = [DifferentiableOutput(n, r.type, return_type(r, const_ref_for_mutable=cref).cpp_type())
            for n, r, ok in zip(names, f.returns, list(flags) + [False] * len(f.returns))
            if ok and is_tensor_like(r.type)]
    # As ATen's: without output_differentiability, formulas that use `grad`
    # (one incoming gradient) make only the first output differentiable
    # (max.dim's values, not its indices).
    if info.output_differentiability is None and info.uses_single_grad:
        return outs[:1]
    return outs


def written_as(fd: ForwardDerivative, info: DifferentiabilityInfo) -> Optional[str]:
    """The forward formula as its entry spells it (`auto_linear` before its
    expansion), None if its key cannot be found."""
    key = next((k for k in info.entry if isinstance(k, str)
                and tuple(x.strip() for x in k.split(",")) == fd.var_names), None)
    return None if key is None else str(info.entry.get(key)).strip()
