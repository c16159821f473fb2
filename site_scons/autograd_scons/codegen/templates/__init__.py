"""The fixed C++ the generator writes, as template files beside this module,
and the small template language that fills them.

A template is C++ text with holes, in torchgen's CodeTemplate style:

    ${name}    replaced by the value's text (a list: its lines)
    $name      the same, for a name not followed by an identifier character

A hole alone on its line is a list hole: each line of its value (a list
of lines, or a string of several) is indented as the hole is, except that
empty lines stay empty, and an empty list removes the line.

Nothing else is special, so braces and quotes are C++'s own.  Emitters
compute only what fills the holes; every fixed line lives in a file here,
which can be read, diffed and formatted as C++.  The files are package data
(setup.py) and part of the generator's version (keys.py): editing one
regenerates every unit.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Mapping, Optional, Sequence, Union

FOLDER = os.path.dirname(os.path.abspath(__file__))
SUFFIXES = (".h", ".cpp")

Value = Union[str, Sequence[str]]

_BLOCK = re.compile(r"^([ \t]*)\$\{(\w+)\}$")
_INLINE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def string_literal(s: str) -> str:
    """`s` as a C++ string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Template:
    def __init__(self, text: str, name: str = "<template>"):
        self.text = text
        self.name = name
        # Compiled once: runs of fixed lines (one string each), list holes
        # (indent, name), and lines with holes inside ([text, name, text, ...]).
        self._parts: list[tuple] = []
        fixed: list[str] = []
        for line in text.split("\n"):
            block = _BLOCK.match(line)
            pieces = _INLINE.split(line) if not block else []
            if not block and len(pieces) == 1:
                fixed.append(line)
                continue
            if fixed:
                self._parts.append(("fixed", "\n".join(fixed)))
                fixed = []
            if block:
                self._parts.append(("block", block.group(1), block.group(2)))
            else:   # split() gives text, then each hole's two groups (one of them None), text, ...
                texts, names = pieces[0::3], [a or b for a, b in zip(pieces[1::3], pieces[2::3])]
                self._parts.append(("inline", texts, names))
        if fixed:
            self._parts.append(("fixed", "\n".join(fixed)))

    def substitute(self, values: Optional[Mapping[str, Value]] = None, **more: Value) -> str:
        env = {**values, **more} if values else more
        out: list[str] = []
        for part in self._parts:
            kind = part[0]
            if kind == "fixed":
                out.append(part[1])
            elif kind == "block":
                indent, v = part[1], self._value(env, part[2])
                lines = v.split("\n") if isinstance(v, str) else v
                out += [indent + x if x else x for x in lines] if indent else lines
            else:
                texts, names = part[1], part[2]
                buf = [texts[0]]
                for name, text in zip(names, texts[1:]):
                    v = self._value(env, name)
                    buf += (v if isinstance(v, str) else "\n".join(v), text)
                out.append("".join(buf))
        return "\n".join(out)

    def lines(self, values: Optional[Mapping[str, Value]] = None, **more: Value) -> list[str]:
        """The text as lines, for a list hole of another template: those of
        the text without its final newline."""
        text = self.substitute(values, **more)
        return (text[:-1] if text.endswith("\n") else text).split("\n")

    def _value(self, env: Mapping[str, Value], key: str) -> Value:
        try:
            return env[key]
        except KeyError:
            raise KeyError(f"{self.name}: no value for ${{{key}}}") from None


@functools.lru_cache(maxsize=None)
def load(name: str) -> Template:
    """The template file `name` (e.g. "prelude.h") of this folder."""
    with open(os.path.join(FOLDER, name), encoding="utf-8") as f:
        return Template(f.read(), name)


def template_files() -> list[str]:
    """Every template's file name, sorted."""
    return sorted(n for n in os.listdir(FOLDER) if n.endswith(SUFFIXES))
