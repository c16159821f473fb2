"""`#line` directives: a compiler error inside a formula names
derivatives.yaml's file and the line of the formula's key.

The line numbers are not in a Function's own text: inserting an entry must
not regenerate (and recompile) every Function below it (keys.py leaves
`line` out of the keys).  A Function names its formula's line through a
macro, `AGF_LINE_<Op>_<k>`, which the one shared header `derivative_lines.h`
defines.  That header is included through a macro, so SCons's scanner does
not make every Function's object depend on it: an object compiled earlier
keeps the lines it was compiled with, which only its debug information
sees; a TU that fails never has an object, so it is compiled again, and
its errors name the current lines.  Without the header (Functions rendered
alone, `render_op`), the `#ifdef` leaves the directive out.

After the formula, a second directive puts the generated file's own
numbering back (its path as the unity buckets name it).
"""

from __future__ import annotations

import os
import re
from typing import Sequence

from ..model.autograd import DifferentiabilityInfo
from ..templates import load, string_literal
from ..tree import BANNER, LINES_H

_RESET = "#line AGF_RESET_TO_GENERATED_LINE"
AT_FORMULA = "#line AGF_LINE_"   # in a body that has a located formula

# Included by function.cpp, hidden from include scanners behind a macro.
INCLUDE = load("derivative_lines_include.h").lines(lines_h=LINES_H)


def line_macro(op: str, k) -> str:
    return f"AGF_LINE_{op}_{k}"


def file_macro(op: str) -> str:
    return f"AGF_YAML_{op}"


def at_formula(op: str, k, statement: list[str]) -> list[str]:
    """`statement` (the line computing formula k of Function `op`, `fw<k>`
    for its forward formula k, in the op's kernel) numbered as the
    formula's line in derivatives.yaml."""
    m = line_macro(op, k)
    return [f"#ifdef {m}", f"#line {m} {file_macro(op)}", "#endif", *statement, _RESET]


def number_back(text: str, path: str) -> str:
    """Each placeholder after a formula becomes `#line <next line> "path"`."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == _RESET:
            lines[i] = re.sub(re.escape(_RESET), f"#line {i + 2} {string_literal(path)}", line)
    return "\n".join(lines)


def shown_path(path: str) -> str:
    """The yaml's name as the compiler will show it: its base name
    (`derivatives.yaml:12: error: ...`), so that a project generates the
    same text in any folder, and moving it rewrites nothing."""
    return os.path.basename(path)


def render_lines(infos: Sequence[DifferentiabilityInfo]) -> dict[str, str]:
    """derivative_lines.h: each formula's file and line, by macro."""
    out = [BANNER, "// Where each formula is in derivatives.yaml, for #line (see codegen/emit/lines.py).",
           "#pragma once", ""]
    for info in sorted((i for i in infos if i.op and i.file), key=lambda i: i.function):
        out.append(f"#define {file_macro(info.function)} {string_literal(shown_path(info.file))}")
        # one less: the `#endif` after the directive takes the first number
        out += [f"#define {line_macro(info.function, k)} {d.line - 1}" for k, d in enumerate(info.derivatives)
                if d.line > 1]
        out += [f"#define {line_macro(info.function, f'fw{k}')} {d.line - 1}"
                for k, d in enumerate(info.forward_derivatives) if d.line > 1]
    return {LINES_H: "\n".join(out) + "\n"}
