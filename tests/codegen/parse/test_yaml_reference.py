"""The features of the extension yaml reference (docs/yaml-reference.md) that the example
(specs/) does not use, in tests/fixtures/yaml_ref: named gradients,
multi-variable keys with grad_input_mask, SymInt[]/int[]/ScalarType? args,
Tensor[] outputs, per-output forward formulas, CPU/CUDA/Meta dispatch.
Everything generated (Functions and op kernels) compiles in one TU, as a
unity bucket would; the unsupported forms are located errors."""

import os
import subprocess
import sys

import pytest

from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.engine.units import load_units
from support.spec_facts import REPO, example_ops

FIXTURE = os.path.join(REPO, "tests", "fixtures", "yaml_ref")
OPTS = EmitOptions(namespace="ref::autograd", includes=("helpers.h",))


def files_of(nf, dv, opts=OPTS):
    files = {}
    for unit in load_units(nf, dv):
        files.update(unit.render(opts))
    return files


def test_fixture_generates_every_unit():
    files = files_of(os.path.join(FIXTURE, "native_functions.yaml"), os.path.join(FIXTURE, "derivatives.yaml"))
    headers = {p: t for p, t in files.items() if p.startswith("ops/") and p.endswith(".h")}
    assert sorted(p for p, t in headers.items() if "namespace ref::native {" in t) == [
        "ops/ref_mask_pair.h", "ops/ref_named_pair.h"]
    assert sorted(headers) == sorted(p[:-4] + ".h" for p in files if p.startswith("ops/") and p.endswith(".cpp"))
    pair = files["ops/ref_named_pair.cpp"]
    assert "first._set_fw_grad(first_new_fw_grad" in pair and "second._set_fw_grad(second_new_fw_grad" in pair
    assert "ref::split_two: forward-mode AD is not supported" in files["ops/ref_split_two.cpp"]


@pytest.mark.compile
def test_everything_generated_compiles_in_one_tu(tmp_path):
    from support import cxx
    if not cxx.have_compiler():
        pytest.skip("no C++ compiler")
    subprocess.run([sys.executable, "-m", "autograd_scons", "generate", "-q", "--native-functions",
                    os.path.join(FIXTURE, "native_functions.yaml"), "--derivatives",
                    os.path.join(FIXTURE, "derivatives.yaml"), "--out", str(tmp_path), "--namespace",
                    "ref::autograd", "--include", "helpers.h"], check=True, cwd=REPO)
    tus = sorted(f"{d}/{p}" for d in ("functions", "ops") for p in os.listdir(tmp_path / d) if p.endswith(".cpp"))
    ref = example_ops(FIXTURE)   # one TU per Function and per op kernel
    assert len(tus) == len(ref.functions) + len(ref.kernels) > 0
    (tmp_path / "unity").mkdir(exist_ok=True)
    (tmp_path / "unity" / "all.cpp").write_text("".join(f'#include "../{p}"\n' for p in tus))
    proc = subprocess.run([cxx.CXX, *cxx.torch_flags(), *cxx.python_flags(), f"-I{FIXTURE}", f"-I{tmp_path}",
                           "-fsyntax-only", str(tmp_path / "unity" / "all.cpp")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_forward_formula_for_a_tensor_list_output_is_a_located_error(tmp_path):
    nf, dv = tmp_path / "native_functions.yaml", tmp_path / "derivatives.yaml"
    nf.write_text("- func: ref::split_two(Tensor self) -> Tensor[]\n")
    dv.write_text("- name: split_two(Tensor self) -> Tensor[]\n  self: not_implemented(\"split_two\")\n"
                  "  result: self_t\n")
    with pytest.raises(SpecError) as e:
        files_of(str(nf), str(dv))
    assert str(e.value) == (f"{dv}:3: entry 'split_two(Tensor self) -> Tensor[]': a forward formula for the "
                            f"'Tensor[]' output 'result' is not supported (only Tensor outputs get tangents)")
