"""The body of a Function's pure backward (`<Op>_apply_functional`): name the
incoming gradients, then compute each input's gradient with its formula and
copy it into that input's slot of the result."""

from __future__ import annotations

from ...model.autograd import Derivative, DifferentiabilityInfo
from ...templates import Template, load
from ..lines import at_formula

# Formulas that may see undefined gradients get this guard; the engine then
# skips the work when no gradient reached this Function.
_ANY_GRAD_DEFINED = "bool any_grad_defined = any_variable_defined(grads);"
_IF = Template("if (${condition}) {")
# In the formula's own input order, not the schema's.
_MASK = Template("  auto grad_input_mask = std::array<bool, ${n}>{$flags};")


def _is_plain_tensor(info: DifferentiabilityInfo, name: str) -> bool:
    for b in info.args_with_derivatives:
        if b.name == name:
            return b.argument is not None and str(b.argument.type) in ("Tensor", "Tensor?")
    return False


def _single(info: DifferentiabilityInfo, d: Derivative, index: dict[str, int], k: int) -> tuple[bool, list[str]]:
    """(guarded, lines) for a formula with one input."""
    name = d.var_names[0]
    formula = d.formula
    guarded = "not_implemented" not in formula and _is_plain_tensor(info, name)
    if guarded:
        formula = f"any_grad_defined ? ({formula}) : Tensor()"
    i = index[name]
    if info.name.startswith("_foreach_"):
        # One gradient per list element: the formula is written for element i.
        return guarded, _located(info, k, load("backward_foreach.cpp").lines(name=name, i=str(i), formula=formula))
    return guarded, _located(info, k, load("backward_single.cpp").lines(name=name, i=str(i), formula=formula))


def _located(info: DifferentiabilityInfo, k: int, lines: list[str]) -> list[str]:
    """The line computing `grad_result` numbered as formula k's yaml line."""
    at = next(j for j, s in enumerate(lines) if "auto grad_result = " in s or "grad_result.emplace_back(" in s)
    return lines[:at] + at_formula(info.function, k, [lines[at]]) + lines[at + 1:]


def _multi(info: DifferentiabilityInfo, d: Derivative, index: dict[str, int], k: int) -> list[str]:
    """A formula returning a tuple, one element per input it names."""
    flags = [f"needs_input_grad[/*{n}*/{index[n]}]" for n in d.var_names]
    lines = [_IF.substitute(condition=" || ".join(flags))]
    if "grad_input_mask" in d.formula:
        lines.append(_MASK.substitute(n=str(len(flags)), flags=", ".join(flags)))
    lines += at_formula(info.function, k, [f"  auto grad_result = {d.formula};"])
    for k, (n, flag) in enumerate(zip(d.var_names, flags)):
        lines.append(f"  if ({flag}) copy_range(grad_inputs, {n}_ix, std::get<{k}>(grad_result));")
    lines.append("}")
    return lines


def gradient_aliases(info: DifferentiabilityInfo) -> list[str]:
    if info.uses_single_grad:
        return ["const auto& grad = grads[0];"]
    # `grad_<output>` for named outputs; `grads[i]` needs no alias.
    return [f"const auto& {n} = grads[{info.available_named_gradients.index(n)}];"
            for n in sorted(info.used_named_gradients)]


def backward_body(info: DifferentiabilityInfo) -> list[str]:
    """Statements between computing the slot ranges and returning grad_inputs."""
    index = {b.name: i for i, b in enumerate(info.args_with_derivatives)}
    blocks: list[str] = []
    guard = False
    for k, d in enumerate(info.derivatives):
        if len(d.var_names) == 1:
            g, lines = _single(info, d, index, k)
            guard |= g
        else:
            lines = _multi(info, d, index, k)
        blocks += lines
    return gradient_aliases(info) + ([_ANY_GRAD_DEFINED] if guard else []) + blocks
