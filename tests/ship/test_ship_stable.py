"""Shipping the stable target: `new --stable` writes a project whose one
switch is pyproject.toml's `[tool.autograd-scons] stable`; its wheel requires
`torch>=<target>` (no minor pin), is tagged `cp39-abi3-<platform>`, carries
`_C.so` and `_C_autograd.py` (and its run-time support), and the one wheel, unpacked,
computes, differentiates (gradcheck, jvp) and passes opcheck under torch
2.13 and 2.14.1 (compile tier; 2.14.1 from the second venv)."""

import os
import subprocess
import sys

import pytest

from autograd_scons import build_meta
from autograd_scons.ship.new import template_files

from support.cuda_helpers import cuda_venv
from support.ship_helpers import new, pip_wheel, this_checkout, wheel_names, wheel_read


def test_new_stable_writes_the_switch_and_stable_kernels(tmp_path):
    new(tmp_path, "demo", this_checkout(tmp_path), "--stable", "2.11")
    project = tmp_path / "demo"
    toml = (project / "pyproject.toml").read_text()
    assert '[tool.autograd-scons]\nstable = "2.11"\n' in toml and "@" not in toml.replace("torch@", "")
    kernels = (project / "csrc" / "kernels.cpp").read_text()
    assert "torch::stable::Tensor scaled_square_cpu(const torch::stable::Tensor& self, double alpha)" in kernels
    assert "ATen" not in kernels and "_C_autograd" in (project / "demo" / "__init__.py").read_text()
    # one file per path: the stable templates replace the project's
    rels = [rel for _, rel in template_files(False, True)]
    assert len(rels) == len(set(rels))


def test_new_stable_with_cuda_is_one_line(tmp_path):
    proc = new(tmp_path, "demo", this_checkout(tmp_path), "--stable", "--cuda", check=False)
    assert proc.returncode != 0 and proc.stderr.strip().count("\n") == 0 and "--cuda" in proc.stderr
    assert not (tmp_path / "demo").exists()


def test_the_backend_requires_torch_from_the_target_on_and_tags_abi3():
    data = {"project": {"name": "demo", "version": "0.1", "dependencies": ["torch>=2", "numpy"]},
            "tool": {"autograd-scons": {"stable": "2.10"}}}
    assert build_meta._requires(data, "2.13.0+cpu") == ["numpy", "torch>=2.10"]
    assert build_meta._wheel_tag(True, stable=True).startswith("cp39-abi3-")
    del data["tool"]
    assert build_meta._requires(data, "2.13.0+cpu") == ["numpy", "torch==2.13.*"]
    data["tool"] = {"autograd-scons": {"stable": "latest"}}
    with pytest.raises(build_meta.BuildError, match=r"pyproject.toml: \[tool.autograd-scons\] stable must be"):
        build_meta._requires(data, "2.13.0+cpu")


RUN = ("import sys; sys.path.insert(0, sys.argv[1]); import torch, demo; "
       "x = torch.full((3,), 3.0, dtype=torch.double, requires_grad=True); op = demo.ops.scaled_square; "
       "assert torch.equal(op(x, 2.0), 2.0 * x * x); "
       "assert torch.autograd.gradcheck(lambda a: op(a, 2.0), (x,)); "
       "assert all(v == 'SUCCESS' for v in torch.library.opcheck(op.default, (x, 2.0)).values()); "
       "t = torch.ones(3, dtype=torch.double); "
       "assert torch.allclose(torch.func.jvp(lambda a: op(a, 2.0), (x.detach(),), (t,))[1], 4.0 * x.detach()); "
       "print(torch.__version__, 'ok')")


@pytest.mark.compile
def test_one_stable_wheel_runs_under_two_torch_versions(tmp_path):
    new(tmp_path, "demo", this_checkout(tmp_path), "--stable")
    wheel, _ = pip_wheel(str(tmp_path / "demo"), str(tmp_path / "dist"), this_checkout(tmp_path))
    assert os.path.basename(wheel).startswith("demo-0.1.0-cp39-abi3-linux_")
    assert {"demo/_C.so", "demo/_C_autograd.py", "demo/stable_autograd_runtime.py"} <= set(wheel_names(wheel))
    meta = wheel_read(wheel, "demo-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: torch>=2.10\n" in meta and "torch==" not in meta
    unpacked = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "zipfile", "-e", wheel, str(unpacked)], check=True)
    needed = subprocess.run(["readelf", "-d", str(unpacked / "demo" / "_C.so")], capture_output=True, text=True).stdout
    assert "[libtorch_cpu.so]" in needed and "libtorch_python" not in needed and "libc10" not in needed
    pythons = [sys.executable]
    venv, why = cuda_venv()
    if venv is not None:
        pythons.append(venv)
    for python in pythons:
        proc = subprocess.run([python, "-I", "-c", RUN, str(unpacked)], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]
    if venv is None:
        (pytest.fail if os.environ.get("AGF_CUDA_TIER_REQUIRED") else pytest.skip)(why)
