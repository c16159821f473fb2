"""The fixed C++ the generator writes, as template files beside this module,
and the small template language that fills them.

A template is C++ text with holes, in torchgen's CodeTemplate style:

    ${name}    replaced by the value's text; a value of several lines (or
               a list of lines) standing alone on its line keeps the hole's
               indentation on every line, and an empty list removes the line
    $name      the same, for a name not followed by an identifier character

Nothing else is special, so braces and quotes are C++'s own.  Emitters
compute only what fills the holes; every fixed line lives in a file here,
which can be read, diffed and formatted as C++.  The files are package data
(setup.cfg) and part of the generator's version (keys.py): editing one
regenerates every unit.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Mapping, Sequence, Union

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

    def substitute(self, values: Mapping[str, Value] = (), **more: Value) -> str:
        env = {**dict(values), **more}
        out: list[str] = []
        for line in self.text.split("\n"):
            block = _BLOCK.match(line)
            if block:
                indent, v = block.group(1), self._value(env, block.group(2))
                lines = v.split("\n") if isinstance(v, str) else list(v)
                out += [indent + x if x else x for x in lines]
            else:
                out.append(_INLINE.sub(lambda m: self._inline(env, m.group(1) or m.group(2)), line))
        return "\n".join(out)

    def _value(self, env: Mapping[str, Value], key: str) -> Value:
        if key not in env:
            raise KeyError(f"{self.name}: no value for ${{{key}}}")
        return env[key]

    def _inline(self, env: Mapping[str, Value], key: str) -> str:
        v = self._value(env, key)
        return v if isinstance(v, str) else "\n".join(v)


@functools.lru_cache(maxsize=None)
def load(name: str) -> Template:
    """The template file `name` (e.g. "prelude.h") of this folder."""
    with open(os.path.join(FOLDER, name), encoding="utf-8") as f:
        return Template(f.read(), name)


def template_files() -> list[str]:
    """Every template's file name, sorted (the generator's version reads them)."""
    return sorted(n for n in os.listdir(FOLDER) if n.endswith(SUFFIXES))
