"""One channel for the user's mistakes (issue 51): a helper that finds a
user's text wrong raises FormulaError, which the caller that knows the entry
locates as a SpecError; any other exception from inside the generator is a
bug and reaches the caller as itself, with its traceback, never reported as
a mistake in the user's formula."""

import traceback

import pytest

from autograd_scons.base.errors import FormulaError, SpecError
from autograd_scons.codegen.parse import load_derivatives

NATIVE = """\
- func: myops::cube(Tensor self) -> Tensor
"""

DERIVATIVES = """\
- name: cube(Tensor self) -> Tensor
  self: 3 * grad * self * self
"""


def _load(tmp_path):
    (tmp_path / "nf.yaml").write_text(NATIVE)
    (tmp_path / "d.yaml").write_text(DERIVATIVES)
    specs = load_derivatives.load_specs(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml"))
    return load_derivatives.infos_from_specs(specs)


def test_a_bug_inside_the_generator_keeps_its_traceback(tmp_path, monkeypatch):
    def planted(*args, **kwargs):
        raise ValueError("planted bug: too many values to unpack")
    monkeypatch.setattr(load_derivatives, "saved_attributes", planted)
    with pytest.raises(ValueError, match="planted bug") as caught:
        _load(tmp_path)
    assert not isinstance(caught.value, SpecError)
    frames = [f.name for f in traceback.extract_tb(caught.value.__traceback__)]
    assert "planted" in frames   # the frame that raised it, not a located one-liner


def test_a_mistake_in_the_users_text_is_located(tmp_path, monkeypatch):
    def planted(*args, **kwargs):
        raise FormulaError("use .sym_sizes() instead of .sizes() in derivative formulas")
    monkeypatch.setattr(load_derivatives, "saved_attributes", planted)
    with pytest.raises(SpecError) as caught:
        _load(tmp_path)
    assert str(caught.value) == (f"{tmp_path / 'd.yaml'}:2: entry 'cube(Tensor self) -> Tensor': formula for "
                                 "'self': use .sym_sizes() instead of .sizes() in derivative formulas")
