"""The project's own mutation fuzz of the specs (issue 60; not a test
module): seeded mutants of an extension's native_functions.yaml and
derivatives.yaml, a typo or a slip as a new user makes them, by class.

Each mutant is generated as `generate` does up to the files (parse, units,
rendering) in a forked worker, with a time limit per mutant
(support/fuzz_runner.py): its outcome is a refusal (a SpecError or another
autograd_scons.Error), an acceptance, a traceback (any other exception), a
hang or a signal.  A refusal must name file and line.
tests/codegen/parse/test_fuzz_specs.py holds the rules.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from typing import Callable

from support.spec_facts import REPO

NATIVE, DERIVATIVES = "native_functions.yaml", "derivatives.yaml"
BASES = {"example": os.path.join(REPO, "specs"), "tiny_ext": os.path.join(REPO, "tests", "fixtures", "tiny_ext")}
CLASSES = ("lines", "entries", "names", "types", "returns", "formulas", "yaml types", "encodings", "sizes",
           "aliases")


@dataclass(frozen=True)
class Mutant:
    cls: str
    base: str
    what: str                 # the mutation, for a failure's message
    files: tuple              # ((file name, bytes), (file name, bytes))


def _base_files(base: str) -> dict[str, str]:
    return {name: open(os.path.join(BASES[base], name), encoding="utf-8").read() for name in (NATIVE, DERIVATIVES)}


# ------------------------------------------------------------- mutations

_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_TYPES = ["Tensor", "Tensor[]", "Tensor?", "int", "int[]", "float", "Scalar", "bool", "str", "SymInt[]",
          "ScalarType?", "Tensor(a!)", "Tensor(a)", "Tensor?[]", "Dimname", "Layout"]
_RETURNS = ["()", "Tensor", "(Tensor, Tensor)", "Tensor[]", "(Tensor a, Tensor b)", "Tensor(a)", "int", "Scalar",
            "(Tensor result, Tensor count)"]
_FORMULAS = ["auto_linear", "auto_element_wise", "non_differentiable", "grad", "''", "grads[3]", "self.sizes()",
             "betax * grad", "grad * self.scalar_type()", "grad.sum(", "grad)", "not_implemented(\"x\")",
             "grad * result", "result_t", "self_t", "grad_count", "[grad]", "{grad}", "grad; return 1"]
_YAML_VALUES = ["[a, b]", "{a: 1}", "3", "true", "~", "'", "|\n    multi\n    line", "- x", "!!binary aGk=",
                "2026-01-01", "0x10", ".nan"]


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _pick_line(rng: random.Random, lines: list[str], pattern: str = r"\S") -> int:
    found = [i for i, line in enumerate(lines) if re.search(pattern, line) and not line.lstrip().startswith("#")]
    return rng.choice(found) if found else 0


def _entries(text: str) -> list[tuple[int, int]]:
    lines = _lines(text)
    starts = [i for i, line in enumerate(lines) if line.startswith("- ")]
    return [(s, e) for s, e in zip(starts, starts[1:] + [len(lines)])]


def _lines_class(rng, files):
    name = rng.choice([NATIVE, DERIVATIVES])
    lines = _lines(files[name])
    i = _pick_line(rng, lines)
    how = rng.choice(["delete", "duplicate", "swap", "truncate", "indent", "dedent"])
    if how == "delete":
        del lines[i]
    elif how == "duplicate":
        lines.insert(i, lines[i])
    elif how == "swap" and i + 1 < len(lines):
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    elif how == "truncate":
        lines = lines[:i]
    elif how == "indent":
        lines[i] = "  " + lines[i]
    else:
        lines[i] = lines[i].lstrip()
    return name, "\n".join(lines), f"{how} line {i + 1}"


def _entries_class(rng, files):
    name = rng.choice([NATIVE, DERIVATIVES])
    lines = _lines(files[name])
    spans = _entries(files[name])
    s, e = rng.choice(spans)
    how = rng.choice(["delete", "duplicate", "move", "merge"])
    block = lines[s:e]
    if how == "delete":
        lines[s:e] = []
    elif how == "duplicate":
        lines[e:e] = block
    elif how == "move":
        lines[s:e] = []
        to = rng.choice([a for a, _ in _entries("\n".join(lines))] or [0])
        lines[to:to] = block
    else:
        lines[s] = "  " + lines[s][2:]
    return name, "\n".join(lines), f"{how} the entry at line {s + 1}"


def _mutate_ident(rng, text: str, pattern: str, how_list) -> tuple[str, str]:
    lines = _lines(text)
    i = _pick_line(rng, lines, pattern)
    words = [m for m in _IDENT.finditer(lines[i])]
    if not words:
        return text, "nothing"
    m = rng.choice(words)
    word = m.group(0)
    how = rng.choice(how_list)
    new = {"typo": word + "x", "swap": word[::-1], "upper": word.upper(), "drop": word[:-1] or "_",
           "digit": word + "2", "namespace": word.split("::")[-1]}[how]
    lines[i] = lines[i][:m.start()] + new + lines[i][m.end():]
    return "\n".join(lines), f"{how} '{word}' -> '{new}' at line {i + 1}"


def _names_class(rng, files):
    if rng.random() < 0.25:   # an op written without its namespace
        lines = _lines(files[NATIVE])
        i = _pick_line(rng, lines, r"^- func: \w+::")
        lines[i] = re.sub(r"^- func: \w+::", "- func: ", lines[i])
        return NATIVE, "\n".join(lines), f"drop the namespace at line {i + 1}"
    name = rng.choice([NATIVE, DERIVATIVES])
    text, what = _mutate_ident(rng, files[name], r"\w", ["typo", "swap", "upper", "drop", "digit"])
    return name, text, what


def _schema_lines(rng, files) -> tuple[int, int, list[str], list[str]]:
    """A native func: line and the derivatives name: line of the same op, or -1."""
    native, deriv = _lines(files[NATIVE]), _lines(files[DERIVATIVES])
    i = _pick_line(rng, native, r"^- func:")
    op = re.sub(r"^- func: (\w+::)?", "", native[i]).split("(")[0]
    j = next((k for k, line in enumerate(deriv) if line.startswith(f"- name: {op}(")), -1)
    return i, j, native, deriv


def _types_class(rng, files):
    i, j, native, deriv = _schema_lines(rng, files)
    args = list(re.finditer(r"([\w\[\]?!()]+) (\w+)(?=[,)=])", native[i]))
    if not args:
        return NATIVE, files[NATIVE], "nothing"
    a = rng.choice(args)
    new = rng.choice(_TYPES)
    both = rng.random() < 0.7 and j >= 0
    native[i] = native[i].replace(a.group(0), f"{new} {a.group(2)}", 1)
    if both:
        deriv[j] = deriv[j].replace(a.group(0), f"{new} {a.group(2)}", 1)
        return (NATIVE, "\n".join(native), DERIVATIVES, "\n".join(deriv)), None, \
            f"'{a.group(0)}' -> '{new} {a.group(2)}' at lines {i + 1} and {j + 1}"
    return NATIVE, "\n".join(native), f"'{a.group(0)}' -> '{new} {a.group(2)}' at line {i + 1}"


def _returns_class(rng, files):
    i, j, native, deriv = _schema_lines(rng, files)
    new = rng.choice(_RETURNS)
    native[i] = re.sub(r"-> .*$", f"-> {new}", native[i])
    if j >= 0 and rng.random() < 0.8:
        deriv[j] = re.sub(r"-> .*$", f"-> {new}", deriv[j])
        return (NATIVE, "\n".join(native), DERIVATIVES, "\n".join(deriv)), None, \
            f"returns -> {new} at lines {i + 1} and {j + 1}"
    return NATIVE, "\n".join(native), f"returns -> {new} at line {i + 1}"


def _formulas_class(rng, files):
    lines = _lines(files[DERIVATIVES])
    i = _pick_line(rng, lines, r"^  \w[\w, ]*: ")
    key, _, formula = lines[i].partition(": ")
    how = rng.choice(["replace", "drop a character", "unbalance", "rename a name"])
    if how == "replace":
        formula = rng.choice(_FORMULAS)
    elif how == "drop a character" and formula:
        k = rng.randrange(len(formula))
        formula = formula[:k] + formula[k + 1:]
    elif how == "unbalance":
        formula = rng.choice(["(", "", "["]) + formula + rng.choice([")", "", "]]"])
    else:
        formula, _ = _mutate_ident(rng, formula, r"\w", ["typo", "digit", "drop"])
    lines[i] = f"{key}: {formula}"
    return DERIVATIVES, "\n".join(lines), f"{how} in the formula at line {i + 1}"


def _yaml_types_class(rng, files):
    name = rng.choice([NATIVE, DERIVATIVES])
    lines = _lines(files[name])
    i = _pick_line(rng, lines, r"^(- |  )\w[\w, ]*: ")
    key, _, _ = lines[i].partition(": ")
    value = rng.choice(_YAML_VALUES)
    lines[i] = f"{key}: {value}"
    return name, "\n".join(lines), f"'{key}' given {value!r} at line {i + 1}"


def _encodings_class(rng, files):
    name = rng.choice([NATIVE, DERIVATIVES])
    data = files[name].encode()
    k = rng.randrange(len(data))
    how = rng.choice(["invalid byte", "latin-1", "bom", "nul", "crlf", "tab", "utf-16"])
    if how == "invalid byte":
        data = data[:k] + bytes([rng.choice([0xff, 0xe9, 0xc3, 0x80])]) + data[k:]
    elif how == "latin-1":
        data = files[name].replace("self", "s\u00e9lf", 1).encode("latin-1", "replace")
    elif how == "bom":
        data = b"\xef\xbb\xbf" + data
    elif how == "nul":
        data = data[:k] + b"\x00" + data[k:]
    elif how == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif how == "tab":
        data = data.replace(b"\n  ", b"\n\t", 1)
    else:
        data = files[name].encode("utf-16")
    return name, data, f"{how} at byte {k}"


def _sizes_class(rng, files):
    how = rng.choice(["long name", "long formula", "deep brackets", "many entries", "long line"])
    if how == "many entries":
        return NATIVE, files[NATIVE] + "".join(f"\n- func: fz::op{k}(Tensor self) -> Tensor\n" for k in range(300)), how
    if how == "deep brackets":
        lines = _lines(files[DERIVATIVES])
        i = _pick_line(rng, lines, r"^  \w+: ")
        key, _, formula = lines[i].partition(": ")
        lines[i] = f"{key}: {'(' * 2000}{formula}{')' * 2000}"
        return DERIVATIVES, "\n".join(lines), how
    if how == "long formula":
        lines = _lines(files[DERIVATIVES])
        i = _pick_line(rng, lines, r"^  \w+: ")
        key, _, formula = lines[i].partition(": ")
        lines[i] = f"{key}: {formula}{' + grad' * 5000}"
        return DERIVATIVES, "\n".join(lines), how
    name = rng.choice([NATIVE, DERIVATIVES])
    lines = _lines(files[name])
    i = _pick_line(rng, lines, r"\w")
    m = rng.choice(list(_IDENT.finditer(lines[i])))
    if how == "long name":
        lines[i] = lines[i][:m.end()] + "n" * 10_000 + lines[i][m.end():]
    else:
        lines[i] += "  # " + "x" * 100_000
    return name, "\n".join(lines), f"{how} at line {i + 1}"


def _aliases_class(rng, files):
    how = rng.choice(["anchor", "alias", "merge key", "alias annotation", "written annotation", "return alias"])
    if how in ("anchor", "alias", "merge key"):
        name = rng.choice([NATIVE, DERIVATIVES])
        spans = _entries(files[name])
        lines = _lines(files[name])
        s, _ = rng.choice(spans)
        if how == "anchor":
            lines[s] = lines[s].replace("- ", "- &a ", 1)
        elif how == "alias":
            lines.append("- *a")
        else:
            lines[s + 1:s + 1] = ["  <<: {x: 1}"]
        return name, "\n".join(lines), f"{how} at line {s + 1}"
    i, j, native, deriv = _schema_lines(rng, files)
    new = {"alias annotation": "Tensor(a)", "written annotation": "Tensor(a!)", "return alias": None}[how]
    if new is None:
        native[i] = re.sub(r"-> Tensor$", "-> Tensor(a)", native[i])
    else:
        native[i] = native[i].replace("Tensor ", f"{new} ", 1)
    return NATIVE, "\n".join(native), f"{how} at line {i + 1}"


MUTATORS: dict[str, Callable] = dict(zip(CLASSES, (
    _lines_class, _entries_class, _names_class, _types_class, _returns_class, _formulas_class,
    _yaml_types_class, _encodings_class, _sizes_class, _aliases_class)))


def mutants(seed: int, per_class: int, bases=tuple(BASES)) -> list[Mutant]:
    """`per_class` mutants of each class, per base, the same for a seed."""
    rng = random.Random(seed)
    out = []
    for base in bases:
        files = _base_files(base)
        for cls in CLASSES:
            for _ in range(per_class):
                changed = MUTATORS[cls](rng, files)
                if isinstance(changed[0], tuple):   # both files changed
                    (n1, t1, n2, t2), _, what = changed
                    new = dict(files, **{n1: t1, n2: t2})
                else:
                    n, t, what = changed
                    new = dict(files, **{n: t})
                data = tuple((k, v if isinstance(v, bytes) else v.encode()) for k, v in sorted(new.items()))
                out.append(Mutant(cls, base, what, data))
    return out
