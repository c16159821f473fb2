"""The stable target's generated Python as text (no torch): what
setup_context saves, and what the emitter and the parse refuse, located."""

from __future__ import annotations

import re

import pytest

from autograd_scons.base.errors import SpecError
from conftest import DERIVATIVES, NATIVE, generated_files


@pytest.fixture(scope="module")
def module_text() -> str:
    return generated_files()["sp_autograd.py"]


def _method(text: str, op: str, method: str) -> str:
    cls = text[text.index(f"class _sp_{op}_Function"):]
    body = cls[cls.index(f"def {method}("):]
    return body[:body.index("@staticmethod")] if "@staticmethod" in body else body


def test_a_reduction_saves_the_sizes_of_its_input_not_the_input(module_text):
    setup = _method(module_text, "row_sum", "setup_context")
    assert "ctx.self_sym_sizes = self.shape if need[0] else None" in setup
    assert "save_for_backward" not in setup


def test_each_saved_value_is_kept_only_when_a_formula_reading_it_is_needed(module_text):
    setup = _method(module_text, "bmul", "setup_context")
    # other's gradient reads self, self's reads other
    assert "ctx.save_for_backward(self if need[1] else None, other if need[0] else None)" in setup
    backward = _method(module_text, "bmul", "backward")
    assert "ctx.self_sym_sizes = self.shape if need[0] else None" in setup
    assert "_d_self = (_helpers.sum_to(grad * other, self_sym_sizes)) if need[0] else None" in backward


def test_functions_manuals_helpers_are_written_beside_where_a_formula_calls_one(module_text):
    files = generated_files()
    assert {"sp_autograd.py", "stable_autograd_runtime.py", "stable_autograd_helpers/__init__.py"} <= set(files)
    assert '_helpers = _beside("stable_autograd_helpers")' in module_text
    assert any("def sum_to(" in text for name, text in files.items() if name.startswith("stable_autograd_helpers/"))


def test_non_differentiable_output_and_missing_forward_formula(module_text):
    assert "ctx.mark_non_differentiable(sign)" in _method(module_text, "sincos_sign", "setup_context")
    assert "return _t_sin, _t_cos, None" in _method(module_text, "sincos_sign", "jvp")
    jvp = _method(module_text, "gather_rows", "jvp")
    assert "_rt.no_forward_formula(" in jvp and "no forward formula" in jvp


def test_the_module_imports_torch_and_its_neighbours_only(module_text):
    imports = set(re.findall(r"^\s*(?:import|from) ([\w.]+)", module_text, re.M))
    assert imports <= {"importlib", "importlib.util", "os", "sys", "torch"}, imports
    assert "autograd_scons" not in module_text


def _write(tmp_path, native: str, derivatives: str):
    (tmp_path / "n.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(derivatives)
    return str(tmp_path / "n.yaml"), str(tmp_path / "d.yaml")


_OP = "- func: t::f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f\n"
_ENTRY = "- name: f(Tensor self) -> Tensor\n  self: grad\n"


def test_an_untranslatable_formula_is_refused_at_its_line(tmp_path):
    n, d = _write(tmp_path, _OP, "- name: f(Tensor self) -> Tensor\n  self: grad * self\n"
                                 "  result: self_t->sym_sizes()\n")
    with pytest.raises(SpecError, match=r"d\.yaml:3: entry 'f\(Tensor self\) -> Tensor': cannot translate "
                                        r"the member access '->"):
        generated_files(n, d, "t")


@pytest.mark.parametrize("value, why", [
    ("pointwis", "'fake' must be 'pointwise'"),
    ("{like: other}", "names a Tensor argument of the op \\(self\\), not 'other'"),
    ("{python: nodots}", "names a Python function as module.function"),
])
def test_a_bad_fake_key_is_refused_at_its_line(tmp_path, value, why):
    n, d = _write(tmp_path, _OP + f"  fake: {value}\n", _ENTRY)
    with pytest.raises(SpecError, match=r"n\.yaml:4: entry 't::f\(Tensor self\) -> Tensor': .*" + why):
        generated_files(n, d, "t")


def test_an_in_place_op_and_a_cpp_batch_rule_are_refused_by_the_stable_target(tmp_path):
    n, d = _write(tmp_path, _OP + "- func: t::f_(Tensor(a!) self) -> ()\n  dispatch:\n    CPU: f_\n", _ENTRY)
    with pytest.raises(SpecError, match=r"n\.yaml:4: .*not supported by the stable target: an op that writes"):
        generated_files(n, d, "t")
    n, d = _write(tmp_path, _OP + "  vmap: {rule: f_rule}\n", _ENTRY)
    with pytest.raises(SpecError, match=r"n\.yaml:4: .*names a C\+\+ batch rule"):
        generated_files(n, d, "t")


def test_the_fixture_files_are_the_ones_tested():
    assert NATIVE.endswith("native_functions.yaml") and DERIVATIVES.endswith("derivatives.yaml")


def test_the_native_cache_keeps_fake():
    """A formula edit reuses the cached parse of native_functions.yaml
    (engine/native_cache.py): `fake:` must survive it, or the next build's
    module would lose its fake kernels."""
    from autograd_scons.codegen.engine.native_records import decode, encode
    from autograd_scons.codegen.parse.native_functions import parse_native_functions
    from autograd_scons.codegen.parse.yaml_io import read_text
    spec = parse_native_functions(NATIVE, read_text(NATIVE), None)
    fakes = {str(f.func.name): f.fake for f in spec.functions if f.fake is not None}
    assert len(fakes) == 7
    again = decode(encode(spec))
    assert {str(f.func.name): f.fake for f in again.functions if f.fake is not None} == fakes


def test_the_module_has_no_undefined_or_unused_name(module_text, tmp_path):
    """ruff's pyflakes rules over the generated module: a name the templates
    or the translator leave undefined would fail only when that formula runs."""
    import shutil
    import subprocess
    import sys
    if subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True).returncode == 0:
        ruff = [sys.executable, "-m", "ruff"]
    elif shutil.which("ruff"):
        ruff = [shutil.which("ruff")]
    else:
        pytest.skip("ruff is not installed (the test extra installs it)")
    path = tmp_path / "sp_autograd.py"
    path.write_text(module_text)
    r = subprocess.run(ruff + ["check", "--no-cache", "--isolated", "--select", "F", "--output-format", "concise",
                               str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
