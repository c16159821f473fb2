"""The fixed C++ lives in codegen/templates/: the template language, that
every template is used and keyed, and that the emitters hold no fixed C++
text of their own (no doubled braces)."""

from __future__ import annotations

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


def test_no_fixed_cxx_in_the_emitters():
    """Doubled braces are C++ text spelled in a Python format string."""
    emit = os.path.join(REPO, "codegen", "emit")
    found = []
    for n in sorted(os.listdir(emit)):
        if n.endswith(".py"):
            with open(os.path.join(emit, n), encoding="utf-8") as f:
                found += [f"{n}:{i}" for i, line in enumerate(f, 1) if re.search(r"\{\{|\}\}", line)]
    assert found == []


def _version(root: str) -> str:
    return subprocess.run([sys.executable, "-c", "from codegen.keys import generator_version; "
                           "print(generator_version())"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_editing_a_template_changes_the_generator_version(tmp_path):
    shutil.copytree(os.path.join(REPO, "codegen"), tmp_path / "codegen",
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = _version(str(tmp_path))
    path = tmp_path / "codegen" / "templates" / "function.cpp"
    path.write_text(path.read_text().replace("compiled autograd", "compiled  autograd", 1))
    assert _version(str(tmp_path)) != before
