"""The three ways a formula names its incoming gradients (`grad`,
`grads[i]`, `grad_<output>`), which one info must not mix."""

from __future__ import annotations

import re
from typing import Sequence

from ..api.autograd import IDENT, Derivative, uses_ident

_GRAD_INDEX_RE = re.compile(r"(?:^|\W)grads\[(\d+)\]")
_GRADS_RE = re.compile(IDENT.format("grads"))


def grad_indices(formula: str) -> list[int]:
    return [int(i) for i in _GRAD_INDEX_RE.findall(formula)]


def check_grad_usage(derivatives: Sequence[Derivative]) -> None:
    """`grad`, `grads[i]` and `grad_<output>` are three ways to name incoming
    gradients; one info must stick to one of them."""
    uses_grad = any(uses_ident(d.formula, "grad") for d in derivatives)
    n_grads = sum(len(_GRADS_RE.findall(d.formula)) for d in derivatives)
    named = any(d.named_gradients for d in derivatives)
    indices = [i for d in derivatives for i in grad_indices(d.formula)]
    if uses_grad and n_grads:
        raise ValueError("formulas mix 'grad' and 'grads'; write grads[0] instead of grad")
    if n_grads == len(indices) and set(indices) == {0}:
        raise ValueError("formulas use only grads[0]; write 'grad' if the first output is the only "
                         "differentiable one")
    if named and (uses_grad or n_grads):
        raise ValueError("formulas mix 'grad_<output>' with 'grad' or 'grads[i]'")
