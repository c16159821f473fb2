"""The stable target's generation (engine/stable_update.py) with the
formulas' own Python helpers (python_helpers=): the copy is one of the
files the build installs beside the library, and an edit of a helper's body
rewrites that copy alone, regenerating no op (fast: no compiler)."""

from __future__ import annotations

from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.codegen.engine.stable_update import update_stable

NATIVE = ("- func: hx::mul(Tensor self, Tensor other) -> Tensor\n  dispatch:\n    CPU: mul\n"
          "- func: hx::neg(Tensor self) -> Tensor\n  dispatch:\n    CPU: neg\n")
DERIVATIVES = ("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: hx::times(grad, other)\n"
               "  other: times(grad, self)\n  result: self_t * other_p + other_t * self_p\n"
               "- name: neg(Tensor self) -> Tensor\n  self: -grad\n  result: -self_t\n")
HELPERS = "import torch\n\n\ndef times(a, b):\n    return a * b\n"
COPY = "stable/stable_autograd_own_helpers.py"


def test_a_helper_edit_rewrites_its_copy_alone(tmp_path):
    for name, text in {"n.yaml": NATIVE, "d.yaml": DERIVATIVES, "hx_helpers.py": HELPERS}.items():
        (tmp_path / name).write_text(text)
    request = FunctionsRequest.of(str(tmp_path / "n.yaml"), str(tmp_path / "d.yaml"), stable="2.10",
                                  python_helpers=str(tmp_path / "hx_helpers.py"))
    gen = str(tmp_path / "gen")
    first = update_stable(gen, request)
    assert COPY in first.support and (tmp_path / "gen" / COPY).read_text() == HELPERS
    assert "_own_helpers.times(grad, other)" in (tmp_path / "gen" / first.python).read_text()

    (tmp_path / "hx_helpers.py").write_text(HELPERS.replace("a * b", "b * a"))
    edited = update_stable(gen, request)
    assert edited.rewritten == [COPY] and edited.reasons == {}
    assert "b * a" in (tmp_path / "gen" / COPY).read_text()

    (tmp_path / "d.yaml").write_text(DERIVATIVES.replace("self: -grad", "self: grad.neg()"))
    formula = update_stable(gen, request)
    assert formula.rewritten == [first.python] and list(formula.reasons) == ["hx::neg"]
    assert update_stable(gen, request).rewritten == []
