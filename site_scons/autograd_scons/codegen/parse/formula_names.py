"""What a formula's text can be checked for before any C++ compiler sees it
(issue 60): balanced brackets, and the plain names it reads.

A formula is a C++ expression.  The generator cannot know every function a
formula calls (torch's FunctionsManual helpers, a user's `includes=`
headers, ATen's methods), so calls are left to the compiler, whose error
the generated `#line` puts at the formula's yaml line.  What it can know is
every plain name a formula reads that is not called, qualified or a
member: those must be an input, an output, a reserved word (`grad`,
`grads`, `grad_<output>`, `result`, `resultN`, `retain_variables`,
`grad_input_mask`), an input's or output's `_t`/`_p` (forward formulas), a
C++ keyword or literal, one of the few torch types a formula spells
unqualified (`Tensor`, `SymInt`, ...), a macro-like constant (`M_PI`: all
capitals) or a constant named the c10 way (`kFloat`).  Anything else
(`betax`, `input_p2`, a whole formula `auto_line`) is a typo the compiler
would report only after generating and compiling the whole bucket; it is
refused here, at the formula's line (docs/yaml-reference.md says where the
line lies).
"""

from __future__ import annotations

import re
from typing import Iterable

from autograd_scons.base.errors import FormulaError, clipped

# String and character literals, and comments: no name or bracket in them counts.
_QUOTED = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)
# A plain name: not after `.`, `->` or `::` (a member, a qualified name), not
# before `::` (a namespace or class), `(` (a call) or `<` (a template).
_PLAIN = re.compile(r"(?<![\w.])(?<!->)(?<!::)\s*\b([A-Za-z_]\w*)\b(?!\s*(?:::|\(|<))")
# `[...](T a, U b)`: a lambda's parameters are names it declares
_LAMBDA_PARAMS = re.compile(r"\]\s*\(([^()]*)\)")

_CPP_WORDS = frozenset("""
    true false nullptr this return auto const constexpr static_cast reinterpret_cast const_cast sizeof
    if else for while do switch case break continue new delete and or not int long short unsigned signed char
    bool float double void size_t int64_t int32_t int16_t int8_t uint64_t uint32_t uint8_t std at c10 torch
""".split())
# torch types a formula may name unqualified (the generated code is inside `using namespace at`)
_TORCH_TYPES = frozenset("""
    Tensor TensorList Scalar ScalarType SymInt SymIntArrayRef IntArrayRef ArrayRef OptionalArrayRef
    OptionalIntArrayRef OptionalSymIntArrayRef TensorOptions Layout Device MemoryFormat Dimname DimnameList
    Generator Storage TensorGeometry optional tuple vector string string_view
""".split())
_RESERVED = frozenset(["grad", "grads", "result", "retain_variables", "grad_input_mask",
                       "original_self_p", "original_self_t"])
_RESULT_N = re.compile(r"result\d+$")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*$|k[A-Z]\w*$")
_CLOSING = {")": "(", "]": "[", "}": "{"}


def _code(formula: str) -> str:
    return _QUOTED.sub(lambda m: '""' if m.group(0)[0] in "\"'" else " ", formula)


def check_brackets(formula: str) -> None:
    """Every (, [ and { closed, in order (strings and comments aside)."""
    opened: list[str] = []
    for ch in _code(formula):
        if ch in "([{":
            opened.append(ch)
        elif ch in _CLOSING:
            if not opened:
                raise FormulaError(f"unbalanced brackets: '{ch}' closes nothing")
            if opened[-1] != _CLOSING[ch]:
                raise FormulaError(f"unbalanced brackets: '{opened[-1]}' is closed by '{ch}'")
            opened.pop()
    if opened:
        raise FormulaError(f"unbalanced brackets: '{opened[-1]}' is never closed")


def unknown_names(formula: str, known: Iterable[str]) -> list[str]:
    """The plain names `formula` reads that nothing gives a meaning (the
    module's docstring lists what does), in order, once each."""
    code = _code(formula)
    declared = set(known)
    for params in _LAMBDA_PARAMS.findall(code):
        declared.update(p.split()[-1].lstrip("&*") for p in params.split(",") if p.split())
    found: list[str] = []
    for m in _PLAIN.finditer(code):
        name = m.group(1)
        if name in declared or name in found or _is_given(name):
            continue
        found.append(name)
    return found


def _is_given(name: str) -> bool:
    return (name in _CPP_WORDS or name in _TORCH_TYPES or name in _RESERVED or _RESULT_N.match(name) is not None
            or _CONSTANT.match(name) is not None)


def known_names(inputs: Iterable[str], outputs: Iterable[str], foreach: bool = False) -> set[str]:
    """The names an entry's formulas may read besides the fixed ones: its
    inputs and outputs, each with its `_t`/`_p` (forward formulas), and
    `grad_<output>`; a _foreach_ op's formulas index its lists by `i`."""
    names: set[str] = {"i"} if foreach else set()
    for n in inputs:
        names.update((n, n + "_t", n + "_p"))
    for n in outputs:
        names.update((n, n + "_t", n + "_p", "grad_" + n))
    return names


def check_formula_text(formula: str, known: Iterable[str], forward: bool = False) -> None:
    """FormulaError for unbalanced brackets or an unknown plain name.  In a
    forward formula a `<name>_t` or `<name>_p` is left to forward AD's own
    check, which says what is wrong with it (no such argument, not
    differentiable: emit/forward_ad.py)."""
    check_brackets(formula)
    unknown = [n for n in unknown_names(formula, known) if not (forward and n.endswith(("_t", "_p")))]
    if unknown:
        listed = ", ".join(f"'{clipped(n)}'" for n in unknown[:3])
        raise FormulaError(f"{listed} {'is' if len(unknown) == 1 else 'are'} not an input, an output or a "
                           "variable of formulas (grad, grads, result, <input>_t, <input>_p, ...); a function "
                           "must be called, a name of a namespace qualified (at::, std::)")
