"""The generated registration + Autograd kernels of an extension's ops, as text
(tests/example/test_scons_example.py compiles and runs them)."""

import os
import re

import pytest

from autograd_scons.codegen.emit.functions.function_files import render_op
from autograd_scons.codegen.emit.op_kernels.kernels import render_kernel
from autograd_scons.codegen.parse.extension_ops import kernel_units
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.parse.load_derivatives import infos_from_specs, load_specs

from support.spec_facts import REPO

SPECS = os.path.join(REPO, "specs")
OPTS = EmitOptions(namespace="myops::autograd")


@pytest.fixture(scope="module")
def units():
    specs = load_specs(os.path.join(SPECS, "native_functions.yaml"), os.path.join(SPECS, "derivatives.yaml"))
    return {u.op: u for u in kernel_units(specs.native, infos_from_specs(specs))}


def text(unit):
    files = render_kernel(unit, OPTS)
    # With `dispatch:`, also the header declaring the hand-written kernels.
    assert set(files) <= {f"ops/{unit.stem}.cpp", f"ops/{unit.stem}.h"}
    return files[f"ops/{unit.stem}.cpp"]


def test_every_extension_function_gets_a_unit_matched_to_its_info(units, example_ops):
    assert sorted(units) == list(example_ops.natives)
    assert sorted(u.stem for u in units.values()) == list(example_ops.kernels)
    assert units["myops::scale_"].info is units["myops::scale"].info   # in-place uses the functional entry
    assert units["myops::scale.out"].info is None                       # out= is not differentiable
    assert units["myops::bmul"].info.op == "BmulBackward0"


def test_functional_kernel_saves_exactly_the_members_its_function_declares(units):
    for op, unit in units.items():
        if unit.info is None:
            continue
        body = text(unit)
        header = render_op(unit.info, OPTS)[f"functions/{unit.info.op}.h"]
        assigned = set(re.findall(r"grad_fn->(\w+) = ", body))
        for member in assigned:
            assert re.search(rf"\b{member}\b", header), (op, member)
        saved = {a.name for a in unit.info.all_saved_inputs + unit.info.all_saved_outputs}
        assert {m.rstrip("_") if m.endswith("_") and m[:-1] in saved else m for m in assigned
                if not m.endswith("_size_")} == saved, op
        assert f'def_lib.def("{unit.func.func}");' in body
        assert re.search(rf'Autograd_lib\.impl\("[\w.]+", TORCH_FN\({unit.stem}_autograd\)\);', body)


def test_multi_output_kernel_connects_only_differentiable_outputs(units):
    body = text(units["myops::sincos_sign"])
    assert "set_history(flatten_tensor_args(sin, cos), grad_fn);" in body
    assert "sign" not in body.split("set_history")[1].split(";")[0]


def test_inplace_kernel_checks_bumps_the_version_and_rebases(units):
    body = text(units["myops::scale_"])
    order = [body.index(s) for s in ("check_inplace(self, _any_requires_grad);", "op.call(self, alpha)",
                                     "increment_version(self);", "rebase_history(flatten_tensor_args(self), grad_fn);")]
    assert order == sorted(order)
    # The example's in-place variant returns nothing (`-> ()`, PyTorch 2's custom-op style).
    kernel = body.split("void myops_scale__autograd(")[1].split("\n}\n")[0]
    assert kernel.startswith("at::Tensor & self") and "return" not in kernel


def test_out_kernel_refuses_inputs_that_require_grad(units):
    body = text(units["myops::scale.out"])
    assert "functions with out=... arguments don't support automatic differentiation" in body
    assert "increment_version(out);" in body and "void myops_scale_out_autograd(" in body


def test_inplace_kernel_saves_a_copy_of_self_the_op_overwrites(tmp_path):
    (tmp_path / "nf.yaml").write_text("- func: ext::twice(Tensor self) -> Tensor\n"
                                      "- func: ext::twice_(Tensor(a!) self) -> Tensor(a!)\n")
    (tmp_path / "d.yaml").write_text("- name: twice(Tensor self) -> Tensor\n  self: grad * self * 2\n")
    specs = load_specs(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml"))
    units = {u.op: u for u in kernel_units(specs.native, infos_from_specs(specs))}
    assert "grad_fn->self_ = SavedVariable(self.clone(), false);" in text(units["ext::twice_"])
    assert text(units["ext::twice_"]).count("return self;") == 1  # ATen style: returns self
    assert "grad_fn->self_ = SavedVariable(self, false);" in text(units["ext::twice"])


def test_aten_functions_get_no_kernels(tmp_path):
    (tmp_path / "nf.yaml").write_text("- func: sin(Tensor self) -> Tensor\n")
    (tmp_path / "d.yaml").write_text("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos()\n")
    specs = load_specs(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml"))
    assert kernel_units(specs.native, infos_from_specs(specs)) == []
