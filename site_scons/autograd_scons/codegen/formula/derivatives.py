"""The translator on the parser's records: a DifferentiabilityInfo's
backward formula and its saved values' expressions as Python, with the
types the records give, and a refusal located at the formula's yaml line
(a SpecError naming file, line and entry).  What the stable target's
emitter and the proof on torch's formulas share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Mapping, Union

from autograd_scons.base.errors import FormulaError, SpecError

from ..model.autograd import Derivative, DifferentiabilityInfo, ForwardDerivative
from ..model.cpp import return_names
from . import names as N
from .translate import translate


@dataclass(frozen=True)
class Translated:
    """A backward formula as Python, and how to compute what it reads that
    the forward must save (`self_sym_sizes` -> `self.shape`): saved name ->
    Python over the op's arguments and outputs (whole values are absent)."""
    python: str
    saved: tuple[tuple[str, str], ...]


def argument_types(info: DifferentiabilityInfo) -> dict[str, str]:
    return {a.name: N.schema_type(str(a.type)) for a in info.func.func.schema_order_arguments()}


def output_types(info: DifferentiabilityInfo) -> dict[str, str]:
    """Every return by the name formulas give it (`result`, `result0`, a
    named return), typed."""
    f = info.func.func
    names = [n if n != "self" else "result" for n in return_names(f)]
    return {n: N.schema_type(str(r.type)) for n, r in zip(names, f.returns)}


def _located(info: DifferentiabilityInfo, line: int, e: FormulaError) -> SpecError:
    return SpecError(str(e), info.file or None, line or info.line or None, str(info.func.func.name))


def translate_derivative(info: DifferentiabilityInfo, d: Derivative, *,
                         helpers: Union[Mapping[str, str], Collection[str]], functions: Mapping[str, N.Callee],
                         helper_prefix: str = "") -> Translated:
    """`d` (one of info.derivatives) as Python; SpecError at its line if refused."""
    saved_in = {s.name: N.cpp_type(s.type.cpp_type()) for s in d.saved_inputs}
    saved_out = {s.name: N.cpp_type(s.type.cpp_type()) for s in d.saved_outputs}
    args, outs = argument_types(info), output_types(info)
    try:
        python = translate(d.formula, inputs=saved_in, outputs=saved_out, helpers=helpers, functions=functions,
                           helper_prefix=helper_prefix)
        saved = tuple((s.name, translate(s.expr, inputs=args, outputs=outs, helpers=helpers, functions=functions,
                                         helper_prefix=helper_prefix))
                      for s in d.saved_inputs + d.saved_outputs if s.expr != s.name)
    except FormulaError as e:
        raise _located(info, d.line, e) from None
    return Translated(python, saved)


def translate_forward(info: DifferentiabilityInfo, fd: ForwardDerivative, *,
                      helpers: Union[Mapping[str, str], Collection[str]], functions: Mapping[str, N.Callee],
                      helper_prefix: str = "") -> str:
    """A forward formula (`result: ...`, auto_linear/auto_element_wise
    expanded) as Python over the arguments, their `_t`/`_p`, and the
    outputs; SpecError at its line if refused."""
    try:
        return translate(fd.formula, inputs=argument_types(info), outputs=output_types(info), helpers=helpers,
                         functions=functions, helper_prefix=helper_prefix)
    except FormulaError as e:
        raise _located(info, fd.line, e) from None
