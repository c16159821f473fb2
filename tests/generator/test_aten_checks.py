"""The checks ATen's generated Autograd kernels make, made by ours, as text
(tests/python/test_aten_differential.py runs them against ATen's):
check_no_requires_grad for an input without a formula, torch's autograd
fallback for an op without any entry, out= refusing, `_out` op names, a
formula for an argument that cannot have a gradient."""

import re

import pytest

from codegen.cli import main
from codegen.emit.kernels import kernel_units, render_kernel
from codegen.emit.options import EmitOptions
from codegen.load_derivatives import infos_from_specs, load_specs

OPTS = EmitOptions(namespace="nbx::autograd")


def units_of(tmp_path, native, derivatives=""):
    (tmp_path / "nf.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(derivatives)
    specs = load_specs(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml"))
    return {u.op: u for u in kernel_units(specs.native, infos_from_specs(specs))}


def cpp(unit):
    return render_kernel(unit, OPTS)[f"ops/{unit.stem}.cpp"]


def test_input_without_formula_is_checked_as_aten_does(tmp_path):
    units = units_of(tmp_path, "- func: nbx::mm2(Tensor a, Tensor b) -> Tensor\n"
                               "- func: nbx::scl(Tensor self, Tensor b) -> Tensor\n"
                               "- func: nbx::scl_(Tensor(a!) self, Tensor b) -> Tensor(a!)\n"
                               "- func: nbx::pick(Tensor a, Tensor mask, Tensor? w, Tensor[] xs) -> Tensor\n",
                     "- name: mm2(Tensor a, Tensor b) -> Tensor\n  a: grad * b\n"
                     "- name: scl(Tensor self, Tensor b) -> Tensor\n  self: grad * b\n"
                     "- name: pick(Tensor a, Tensor mask, Tensor? w, Tensor[] xs) -> Tensor\n"
                     "  a: grad\n  mask: non_differentiable\n")
    assert 'check_no_requires_grad(b, "b", "mm2");' in cpp(units["nbx::mm2"])
    assert 'check_no_requires_grad(a, "a"' not in cpp(units["nbx::mm2"])
    assert 'check_no_requires_grad(b, "b", "scl_");' in cpp(units["nbx::scl_"])   # ATen: the in-place name
    pick = cpp(units["nbx::pick"])
    assert re.findall(r'check_no_requires_grad\((\w+),', pick) == ["w", "xs"]   # not the non_differentiable mask
