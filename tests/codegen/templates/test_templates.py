"""The fixed C++ lives in codegen/templates/: the template language, that
every template is used and keyed, and that the emitters hold no fixed C++
text of their own (no doubled braces)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys

import pytest

from autograd_scons.codegen.templates import Template, load, template_files
from support.spec_facts import REPO


def test_list_hole_indents_its_lines_and_an_empty_list_removes_the_line():
    t = Template("f() {\n  ${body}\n  ${none}\n}\n")
    assert t.substitute(body=["a;", "", "if (x) {", "  b;", "}"], none=[]) == \
        "f() {\n  a;\n\n  if (x) {\n    b;\n  }\n}\n"


def test_inline_holes_and_a_string_of_lines():
    t = Template("int ${name}(${params}) { return $value; }\n  ${text}")
    assert t.substitute(name="f", params="int a,\n    int b", value="a", text="x\ny") == \
        "int f(int a,\n    int b) { return a; }\n  x\n  y"


def test_braces_are_cxx_and_values_are_not_rescanned():
    assert Template("{${a}}").substitute(a="${b}") == "{${b}}"


def test_a_missing_value_names_the_template_and_hole():
    with pytest.raises(KeyError, match=r"function\.h: no value for \$\{description\}"):
        load("function.h").substitute(banner="//")


def test_lines_drop_the_final_newline():
    assert Template("a\n${b}\n").lines(b=["x", "y"]) == ["a", "x", "y"]


def test_every_template_is_used_by_the_generator():
    sources = ""
    for folder, _, names in os.walk(os.path.join(REPO, "codegen")):
        for n in names:
            if n.endswith(".py"):
                with open(os.path.join(folder, n), encoding="utf-8") as f:
                    sources += f.read()
    unused = [t for t in template_files() if f'"{t}"' not in sources]
    assert template_files() and unused == []


# A whole C++ line: a statement, a block's opening or closing, a preprocessor line.
_CXX_LINE = re.compile(r"^\s*(#\s*\w+\b.*|.*;\s*|.*\{\s*|\}.*)$")


def _fixed_text(node: ast.AST):
    """The text of a string with no computed part (a literal, or an f-string
    without a placeholder), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and not any(isinstance(v, ast.FormattedValue) for v in node.values):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


def _list_operands(node: ast.AST) -> list:
    """The list displays of a `+` chain (`["a;"] + xs + ["}"]`), or of one list."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _list_operands(node.left) + _list_operands(node.right)
    return [node] if isinstance(node, (ast.List, ast.Tuple)) else []


def fixed_cxx(source: str, name: str) -> list[str]:
    """Where `source` (an emitter) spells fixed C++ itself: doubled braces
    (C++ in a format string), an f-string with no placeholder, and two or
    more fixed C++ lines in one list or `+` chain of lists (a block that
    belongs in a template file)."""
    found = [f"{name}:{i}: doubled braces" for i, line in enumerate(source.splitlines(), 1)
             if re.search(r"\{\{|\}\}", line)]
    tree = ast.parse(source, name)
    inner = {id(n) for node in ast.walk(tree) if isinstance(node, ast.BinOp) for n in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and _fixed_text(node) is not None:
            found.append(f"{name}:{node.lineno}: an f-string with no placeholder")
        if id(node) in inner or not _list_operands(node):
            continue
        lines = [t for lst in _list_operands(node) for e in lst.elts
                 if (t := _fixed_text(e)) is not None and _CXX_LINE.match(t)]
        if len(lines) >= 2:
            found.append(f"{name}:{node.lineno}: fixed C++ lines {lines[:3]}")
    return found


def test_no_fixed_cxx_in_the_emitters():
    emit = os.path.join(REPO, "codegen", "emit")
    found = []
    for n in sorted(os.listdir(emit)):
        if n.endswith(".py"):
            with open(os.path.join(emit, n), encoding="utf-8") as f:
                found += fixed_cxx(f.read(), n)
    assert found == []


@pytest.mark.parametrize("source", [
    'x = f"int {{a}};"\n',
    'call = [f"static auto op = c10::Dispatcher::singleton()", f"    .typed<{sig}>();"]\n',
    'out = ["{", "  at::AutoDispatchBelowADInplaceOrView guard;", f"  op.call({args});", "}"]\n',
    'out = ["if (_any_has_fw_grad) {"] + ["  " + b for b in body] + ["}"]\n',
    'INCLUDE = ["#include AGF_DERIVATIVE_LINES_H", "#endif"]\n',
])
def test_fixed_cxx_is_found(source):
    """The check can fail: each shape the emitters once had is caught."""
    assert fixed_cxx(source, "e.py")


def test_computed_lines_are_not_fixed_cxx():
    assert fixed_cxx('out = [f"auto& {r} = _result;" for r in rs] + [f"return {x};", "}"]\n'
                     'y = load("op.cpp").lines(args=", ".join(names))\n', "e.py") == []


# The generator's package copied to the current folder, first on sys.path.
_COPY_AS_THE_GENERATOR = """
import os, sys
sys.path.insert(0, os.path.abspath("site_scons"))
from autograd_scons.codegen.engine.keys import generator_version
print(generator_version())
"""


def _version(root: str) -> str:
    return subprocess.run([sys.executable, "-c", _COPY_AS_THE_GENERATOR], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_editing_a_template_changes_the_generator_version(tmp_path):
    shutil.copytree(os.path.join(REPO, "site_scons", "autograd_scons"), tmp_path / "site_scons" / "autograd_scons",
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = _version(str(tmp_path))
    path = tmp_path / "site_scons" / "autograd_scons" / "codegen" / "templates" / "function.cpp"
    path.write_text(path.read_text().replace("compiled autograd", "compiled  autograd", 1))
    assert _version(str(tmp_path)) != before
