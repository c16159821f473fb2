"""The three ways a formula names its incoming gradients (`grad`,
`grads[i]`, `grad_<output>`), which one info must not mix, and the
arguments that must not take one of those names."""

from __future__ import annotations

import re
from typing import Optional, Sequence

from autograd_scons.base.errors import FormulaError
from ..model.autograd import IDENT, Derivative, uses_ident

_GRAD_INDEX_RE = re.compile(r"(?:^|\W)grads\[(\d+)\]")
_GRADS_RE = re.compile(IDENT.format("grads"))

# Words a backward formula gives a meaning of their own (besides the
# `grad_<output>` of each named output).  An argument of the same name would
# be the same word with a second meaning: the generated code declares both
# (a C++ error inside generated code), and no choice between them is safe
# (`grad: foo(grad, ...)` reads as the incoming gradient and as the argument
# alike), so the entry is refused instead.
FORMULA_WORDS = {
    "grad": "the incoming gradient",
    "grads": "the incoming gradients",
    "retain_variables": "whether the graph is kept after the backward",
}
# Refused whether or not a formula uses them, as torchgen does.
ALWAYS_RESERVED = {
    "result": "the output",
    "grad_input_mask": "which inputs need a gradient",
}


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
        raise FormulaError("formulas mix 'grad' and 'grads'; write grads[0] instead of grad")
    if n_grads == len(indices) and set(indices) == {0}:
        raise FormulaError("formulas use only grads[0]; write 'grad' if the first output is the only "
                         "differentiable one")
    if named and (uses_grad or n_grads):
        raise FormulaError("formulas mix 'grad_<output>' with 'grad' or 'grads[i]'")


def reserved_argument(arg_names: Sequence[str], formulas: Sequence[str],
                      named_gradients: Sequence[str]) -> Optional[str]:
    """The one-line reason to refuse an argument named as a word the formulas
    reserve (`grad` where a formula uses `grad`, ...), or None."""
    words = dict(FORMULA_WORDS, **{n: f"the gradient of the output '{n[len('grad_'):]}'" for n in named_gradients})
    for name in arg_names:
        meaning = ALWAYS_RESERVED.get(name)
        if meaning is None and name in words and any(uses_ident(f, name) for f in formulas):
            meaning = words[name]
        if meaning is not None:
            return (f"argument '{name}' has a name the formulas reserve: in a formula, '{name}' is "
                    f"{meaning}; rename the argument, e.g. to '{_rename(name)}', in its schema and in "
                    f"this entry's name")
    return None


def _rename(name: str) -> str:
    return "grad_output" if name in ("grad", "grads") else f"{name}_arg"
