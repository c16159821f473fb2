"""The stable example (tests/fixtures/stable_ext: CPU ops with several
inputs, a float argument, an optional tensor, a reduction; kernels on
torch::stable::Tensor alone), built ONCE by `scons` under the installed
torch (2.13), then loaded from the generated files alone (the .so, its
autograd module and the module's run-time support, with the fake kernel the
yaml names, copied into an empty folder) by a torch with nothing else
(`python -I`): values, gradcheck, gradgradcheck, forward AD (jvp, jacfwd,
dual tensors, forward-mode gradcheck), opcheck and torch.compile(fullgraph)
forward+backward (support/stable_example_checks.py), under 2.13 and under
torch 2.14.1 in the second venv (support/cuda_helpers.py; skipped without
it, failed under .ci/run).

Also in this build folder: a formula edit compiles nothing, a kernel edit
compiles that kernel's object alone; an unstable header is a compile
error at its line; a planted `at::` call fails the link's audit in one line
naming the symbol and the object."""

import os
import shutil
import subprocess
import sys

import pytest

from support.cuda_helpers import cuda_venv
from support.scons_helpers import REPO, compiled, edit, linked, scons

pytestmark = pytest.mark.compile

FIXTURE = os.path.join(REPO, "tests", "fixtures", "stable_ext")
CHECKS = os.path.join(REPO, "tests", "support", "stable_example_checks.py")
# what the build writes beside the library, and the helpers the yaml names
FILES = ("stableops_ext.so", "stableops_ext_autograd.py", "stable_autograd_runtime.py")
HELPERS = ("stableops_fakes.py",)


def build(project, *args, check=True):
    return scons(REPO, f"EXAMPLE={project}", f"BUILD={project}/build", "OPT=-O1", "-j2", *args, check=check)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(the project folder, a folder holding the generated files alone)."""
    tmp = tmp_path_factory.mktemp("stable")
    project = tmp / "stable_ext"
    shutil.copytree(FIXTURE, project)
    out = build(project).stdout
    assert compiled(out) == ["kernels.os", "registration.os"]
    shipped = tmp / "shipped"
    shipped.mkdir()
    for name in FILES:
        shutil.copy(project / "build" / "example" / name, shipped / name)
    for name in HELPERS:
        shutil.copy(project / name, shipped / name)
    # the FunctionsManual helper sumsq's formula calls, generated as a Python package
    shutil.copytree(project / "build" / "example" / "stable_autograd_helpers", shipped / "stable_autograd_helpers")
    return project, shipped


def run_checks(python, folder):
    proc = subprocess.run([python, "-I", CHECKS, str(folder)], capture_output=True, text=True, cwd=str(folder))
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return proc.stdout


CHECKED = ["sumsq: ok", "gradcheck: ok", "gradgradcheck: ok", "forward AD (jvp): ok", "forward-mode gradcheck: ok",
           "opcheck sumsq: ok", "torch.compile(fullgraph=True) forward+backward: ok"]


def test_the_build_loads_and_passes_its_checks_under_the_torch_it_was_built_with(built):
    out = run_checks(sys.executable, built[1])
    assert all(line in out.splitlines() for line in CHECKED)


def test_the_same_build_loads_and_passes_its_checks_under_torch_2_14(built):
    python, why = cuda_venv()
    if python is None:
        (pytest.fail if os.environ.get("AGF_CUDA_TIER_REQUIRED") else pytest.skip)(why)
    out = run_checks(python, built[1])
    assert all(line in out.splitlines() for line in CHECKED)


def test_a_formula_edit_compiles_nothing_and_a_kernel_edit_its_object(built):
    project = built[0]
    edit(project / "derivatives.yaml", "self: grad * alpha", "self: alpha * grad")
    out = build(project).stdout
    assert compiled(out) == [] and linked(out, "stableops_ext.so") is None
    module = (project / "build" / "example" / "stableops_ext_autograd.py").read_text()
    assert "alpha * grad" in module   # the op's Python, regenerated, beside the library
    edit(project / "csrc" / "kernels.cpp", "float or double tensors only", "float or double tensors, no other")
    out = build(project).stdout
    assert compiled(out) == ["kernels.os"] and linked(out, "stableops_ext.so") is not None


def planted(tmp_path, old, new):
    project = tmp_path / "stable_ext"
    shutil.copytree(FIXTURE, project)
    edit(project / "csrc" / "kernels.cpp", old, new)
    proc = build(project, check=False)
    return project, proc


def test_an_unstable_header_is_a_compile_error_at_its_line(tmp_path):
    project, proc = planted(tmp_path, "#include <torch/csrc/stable/ops.h>",
                            "#include <ATen/ATen.h>\n#include <torch/csrc/stable/ops.h>")
    assert proc.returncode != 0
    assert "kernels.cpp:4:" in proc.stdout + proc.stderr   # the #include's line, in the compiler's error
    assert "TORCH_STABLE_ONLY" in proc.stdout + proc.stderr


def test_a_planted_aten_call_fails_the_build_in_one_line(tmp_path):
    project, proc = planted(
        tmp_path, "namespace stableops::native {\n",
        "namespace at { void manual_seed(uint64_t seed); }\n\nnamespace stableops::native {\n")
    edit(project / "csrc" / "kernels.cpp", "  same_shape(self, other);", "  at::manual_seed(0);\n  same_shape(self, other);")
    proc = build(project, check=False)
    errors = [x for x in proc.stderr.splitlines() if x.startswith("scons: ***")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr
    assert "csrc/kernels.os: stable-ABI audit: references 'at::manual_seed(unsigned long)'" in errors[0]
    assert not (project / "build" / "example" / "stableops_ext.so").exists()
