"""The extension's own Python helpers in the stable target's generated
module (python_helpers=): called where the formulas call them, copied beside
the module, refused at the formula's yaml line where the module lacks the
name, and an edit of the module changing its copy alone (fast: no torch)."""

from __future__ import annotations

import pytest

from autograd_scons.base.errors import OptionError, SpecError
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from conftest import HELPERS, generated_files

_OP = "- func: t::f(Tensor self, Tensor other) -> Tensor\n  dispatch:\n    CPU: f\n"
_ENTRY = "- name: f(Tensor self, Tensor other) -> Tensor\n  self: {self}\n  other: grad\n"
_HELPERS = "import torch\n\n\ndef scale(g, x):\n    return g * x\n"


def _specs(tmp_path, formula: str, helpers: str = _HELPERS):
    (tmp_path / "n.yaml").write_text(_OP)
    (tmp_path / "d.yaml").write_text(_ENTRY.format(self=formula))
    (tmp_path / "h.py").write_text(helpers)
    return str(tmp_path / "n.yaml"), str(tmp_path / "d.yaml"), str(tmp_path / "h.py")


def test_the_fixtures_formulas_call_its_own_helpers_from_a_copy_beside_the_module():
    files = generated_files()
    text = files["sp_autograd.py"]
    assert '_own_helpers = _beside("stable_autograd_own_helpers")   # the formulas\' own helpers (a copy of ' \
           'sp_helpers.py)' in text
    assert "_own_helpers.reduce_to(grad * other, self_sym_sizes)" in text
    assert "_own_helpers.reduce_as(grad * self, other)" in text
    assert "_own_helpers.add_products(self_t, other_p, self_p, other_t)" in text   # a forward formula
    with open(HELPERS, encoding="utf-8") as f:
        assert files["stable_autograd_own_helpers.py"] == f.read()   # verbatim: its lines are the file's


def test_a_module_no_formula_calls_is_not_copied(tmp_path):
    n, d, h = _specs(tmp_path, "grad * other")
    files = generated_files(n, d, "t", python_helpers=h)
    assert "stable_autograd_own_helpers.py" not in files and "_own_helpers" not in files["t_autograd.py"]


@pytest.mark.parametrize("formula, why", [
    ("t::nothere(grad, other)", r"the call of 't::nothere' \('nothere' is not a function of the helper module "),
    ("grad * nothere(other)", r"the call of 'nothere' \(not a function of the helper module "),
])
def test_a_name_the_module_does_not_define_is_refused_at_the_formulas_line(tmp_path, formula, why):
    n, d, h = _specs(tmp_path, formula)
    with pytest.raises(SpecError, match=r"d\.yaml:2: entry 'f\(Tensor self, Tensor other\) -> Tensor': cannot "
                                        r"translate " + why + f"'{h}'"):
        generated_files(n, d, "t", python_helpers=h)


def test_a_cpp_helper_without_a_module_is_refused_at_its_line(tmp_path):
    n, d, _ = _specs(tmp_path, "t::scale(grad, other)")
    with pytest.raises(SpecError, match=r"d\.yaml:2: .*'t::scale' \(a C\+\+ helper: .*python_helpers="):
        generated_files(n, d, "t", python_helpers=None)


def test_a_syntax_error_in_the_module_is_refused_in_one_line_at_its_line(tmp_path):
    n, d, h = _specs(tmp_path, "t::scale(grad, other)", helpers="import torch\n\n\ndef scale(g, x)\n    return g\n")
    with pytest.raises(SpecError) as e:
        generated_files(n, d, "t", python_helpers=h)
    assert str(e.value).startswith(f"{h}:4: the formulas' Python helper module (python_helpers=) has a syntax error")
    assert "\n" not in str(e.value)


def test_an_edit_of_the_module_changes_its_copy_alone_and_an_unrelated_edit_nothing(tmp_path):
    n, d, h = _specs(tmp_path, "t::scale(grad, other)")
    before = generated_files(n, d, "t", python_helpers=h)
    (tmp_path / "h.py").write_text(_HELPERS.replace("return g * x", "return x * g"))
    after = generated_files(n, d, "t", python_helpers=h)
    assert {k for k in before if before[k] != after.get(k)} == {"stable_autograd_own_helpers.py"}
    assert "return x * g" in after["stable_autograd_own_helpers.py"]
    (tmp_path / "other_helpers.py").write_text(_HELPERS.replace("return g * x", "return 0"))   # not the named one
    assert generated_files(n, d, "t", python_helpers=h) == after
    (tmp_path / "h.py").write_text("import torch\n")   # the function removed: refused, never a stale call
    with pytest.raises(SpecError, match=r"d\.yaml:2: .*'scale' is not a function of the helper module"):
        generated_files(n, d, "t", python_helpers=h)


def test_the_request_carries_the_module_through_json():
    request = FunctionsRequest.of("n.yaml", "d.yaml", stable="2.10", python_helpers="py/myops_helpers.py")
    assert request.python_helpers == "py/myops_helpers.py"
    assert FunctionsRequest.from_json(request.to_json()) == request
    assert FunctionsRequest.of("n.yaml", "d.yaml", stable=True).python_helpers is None
    with pytest.raises(OptionError, match=r"python_helpers must be the path of one Python file"):
        FunctionsRequest.of("n.yaml", "d.yaml", stable=True, python_helpers="include/myops/backward_helpers.h")
    with pytest.raises(OptionError, match=r"names the stable target's Python helpers: give stable= too"):
        FunctionsRequest.of("n.yaml", "d.yaml", python_helpers="py/myops_helpers.py")
