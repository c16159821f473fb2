"""The cuda tier's half of shipping (marker `cuda`, run under AGF_CUDA_VENV
like test_cuda_tier.py beside it): `python -m autograd_scons new NAME --cuda`
under torch 2.14.1 (a CUDA 13.0 build), its wheel built by pip with
--no-build-isolation and `-C TORCH_CUDA_ARCH_LIST=9.0`, then: the backend
says which architectures it built, the wheel pins torch 2.14, its library
holds the `.cu` kernel's SASS for sm_90, and the project's own tests pass
against the wheel's files (the CUDA kernel registered; its values on a GPU
checked where one is visible, else skipped saying so)."""

import os
import zipfile

import pytest

from support import proof_share, ship_helpers as ship
from test_cuda_tier import fatbin_sass, venv  # noqa: F401  (the tier's venv fixture: skips without it)

# (takes turns with tests/cuda/test_merge_cuda.py: each commit's CI builds one CUDA wheel)
pytestmark = [pytest.mark.cuda, pytest.mark.compile, proof_share.in_turn(2, "the CUDA wheel's module")]

NAME = "cuda_first"


@pytest.fixture(scope="module")
def built(venv, tmp_path_factory):  # noqa: F811
    tmp = tmp_path_factory.mktemp("ship-cuda")
    path = ship.this_checkout(tmp)
    ship.new(tmp, NAME, path, "--cuda", python=venv)
    wheel, proc = ship.pip_wheel(str(tmp / NAME), str(tmp / "dist"), path, "TORCH_CUDA_ARCH_LIST=9.0", "-j=2",
                                 python=venv)
    return tmp, wheel, proc.stdout + proc.stderr


def test_the_wheel_carries_the_cuda_kernel_for_the_arch_list(built):
    tmp, wheel, out = built
    assert [line.strip() for line in out.splitlines() if line.strip().startswith("autograd_scons: CUDA")] == \
        ["autograd_scons: CUDA kernels for 9.0"]
    metadata = ship.wheel_read(wheel, f"{NAME}-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: torch==2.14.*" in metadata.splitlines()
    library = str(tmp / "_C.so")
    with open(library, "wb") as f:
        f.write(ship.wheel_read(wheel, f"{NAME}/_C.so"))
    assert fatbin_sass(library) == [90]


def test_the_cuda_projects_own_tests_pass_against_the_wheel(built, venv):  # noqa: F811
    tmp, wheel, _ = built
    site = tmp / "site"  # the wheel's files, as pip would install them (the tier's venv stays as it is)
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    far = tmp / "far"
    os.makedirs(far)
    proc = ship.run([venv, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", tmp / NAME / "tests"], far,
                    ship.environ(str(site)), check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    gpu = ship.run([venv, "-c", "import torch; print(torch.cuda.is_available())"], far, ship.environ("")).stdout
    if gpu.strip() == "True":
        assert "7 passed" in proc.stdout, proc.stdout[-2000:]
    else:  # the CUDA kernel is built and registered; only its values need a GPU
        assert "6 passed, 1 skipped" in proc.stdout and "no CUDA GPU visible" in proc.stdout, proc.stdout[-2000:]
