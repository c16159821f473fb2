"""The `.cu` build (site_scons/autograd_scons/tool/cuda_objects.py, site_scons/autograd_scons/buildenv/cuda_flags.py)
with stand-ins: a clone whose cached torch facts say CUDA 13.0, the
stand-in nvcc (fakenvcc.py, through CUDA_HOME) and the stand-in g++
(fakecxx.sh).  What is compiled, with which flags, what recompiles, the
one-line errors and the skip line.  The real nvcc build is
tests/cuda/test_cuda_tier.py's (marker `cuda`)."""

import json
import os
import shutil
import sys

import pytest

from support.cuda_helpers import fake_cuda_facts, install_fake_nvcc
from support.scons_helpers import FAKE_CXX, REPO, clone, compiled, edit, linked, scons
from support.spec_facts import example_ops

from autograd_scons.buildenv import cuda_flags

ARGS = ("-j2", f"CXX={FAKE_CXX}", "PCH=1")  # PCH=1: the C++ TUs take the prelude (and nvcc none of its flags)
CU_OBJECT = "kernels_cuda.os"
# -j2: one bucket (UNITY=auto: the binding TU and the hand-written kernels.cpp
# take the other core), the binding TU and kernels.cpp
CPP_OBJECTS = example_ops(os.path.join(REPO, "specs")).objects(1)
WITHOUT = "-DAUTOGRAD_EXT_WITHOUT_CUDA_KERNELS"


# ------------------------------------------------ TORCH_CUDA_ARCH_LIST


@pytest.mark.parametrize("text", ["8.0;9.0", "8.0 8.6+PTX", "9.0a", "Ampere", "Turing;Hopper", "7.5+PTX;9.0"])
def test_arch_flags_are_cpp_extensions(monkeypatch, text):
    from torch.utils.cpp_extension import _get_cuda_arch_flags  # the reference
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", text)
    ours = cuda_flags.gencode_flags(cuda_flags.arch_list(text, {}))
    assert sorted(set(ours)) == _get_cuda_arch_flags() and len(ours) == len(set(ours))


def test_without_a_list_the_visible_gpus_or_torchs_oldest_arch_with_ptx():
    assert cuda_flags.arch_list("", {"gpus": ["9.0", "8.0", "9.0"]}) == ["8.0", "9.0+PTX"]
    assert cuda_flags.arch_list("native", {"gpus": [], "cuda_arches": ["sm_90", "sm_75", "sm_120"]}) == ["7.5+PTX"]
    assert cuda_flags.gencode_flags(["12.0+PTX"]) == ["-gencode=arch=compute_120,code=sm_120",
                                                      "-gencode=arch=compute_120,code=compute_120"]


def test_the_define_that_leaves_cuda_registrations_out_is_the_generators():
    from autograd_scons.codegen.emit.op_kernels.registration import WITHOUT_CUDA
    assert cuda_flags.WITHOUT_CUDA_DEFINE == WITHOUT_CUDA


# ------------------------------------------------ builds with stand-ins


def nvcc_lines(out):
    return [line for line in out.splitlines() if "/bin/nvcc " in line and " -c " in line]


@pytest.fixture(scope="module")
def cuda_home(tmp_path_factory):
    return install_fake_nvcc(tmp_path_factory.mktemp("cuda"))


def environ(cuda_home, **over):
    return dict({"CUDA_HOME": cuda_home, "CUDA_PATH": None, "TORCH_CUDA_ARCH_LIST": "8.0;9.0",
                 "FAKE_NVCC_RELEASE": "13.0"}, **over)


@pytest.fixture(scope="module")
def built(tmp_path_factory, cuda_home):
    """(clone built with the CUDA kernels, that build's stdout)."""
    root = clone(tmp_path_factory.mktemp("cuda-build") / "repo")
    fake_cuda_facts(root)
    return root, scons(root, *ARGS, environ=environ(cuda_home)).stdout


@pytest.fixture
def copy(built, tmp_path):
    dst = tmp_path / "repo"
    shutil.copytree(built[0], dst, symlinks=True)
    return str(dst)


def test_the_cu_compiles_with_nvcc_for_each_architecture(built):
    out = built[1]
    assert compiled(out) == sorted(CPP_OBJECTS + [CU_OBJECT])
    [line] = nvcc_lines(out)
    for num in ("80", "90"):
        assert f"-gencode=arch=compute_{num},code=sm_{num}" in line
    assert "code=compute_" not in line  # no +PTX asked for
    # The example's C++ TUs take the precompiled prelude (PCH=1); nvcc
    # must not get its GCC flags (it refuses -Winvalid-pch).
    assert "-Winvalid-pch" in [x for x in out.splitlines() if "kernels.os -c" in x][0]
    assert "-Winvalid-pch" not in line and "prelude_pch.h" not in line
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS  # the reference
    for flag in COMMON_NVCC_FLAGS + ["-Xcompiler -fPIC", "-std=c++20", "-D_GLIBCXX_USE_CXX11_ABI=",
                                     "-DAUTOGRAD_EXT_TORCH_VERSION=", f"-ccbin {FAKE_CXX}"]:
        assert flag in line, flag
    assert "specs/csrc/kernels_cuda.cu" in line
    assert all(WITHOUT not in x for x in out.splitlines())  # the CUDA registrations are compiled in
    assert CU_OBJECT in linked(out, "myops_ext.so")
    link = next(x for x in out.splitlines() if "-o build/example/myops_ext.so" in x)
    for lib in ("-lcudart", "-lc10_cuda", "-ltorch_cuda"):
        assert lib in link


@pytest.mark.compile
def test_an_arch_change_recompiles_the_cuda_objects_only(copy, cuda_home):
    assert compiled(scons(copy, *ARGS, environ=environ(cuda_home)).stdout) == []
    out = scons(copy, *ARGS, environ=environ(cuda_home, TORCH_CUDA_ARCH_LIST="9.0+PTX")).stdout
    assert compiled(out) == [CU_OBJECT]
    [line] = nvcc_lines(out)
    assert "code=sm_80" not in line and "-gencode=arch=compute_90,code=compute_90" in line
    assert linked(out, "myops_ext.so") is not None
    # On the command line too, and a second build compiles nothing.
    assert compiled(scons(copy, *ARGS, "TORCH_CUDA_ARCH_LIST=9.0+PTX", environ=environ(cuda_home)).stdout) == []


@pytest.mark.compile
def test_nvcc_version_is_in_the_signature(copy, cuda_home):
    out = scons(copy, *ARGS, environ=environ(cuda_home, FAKE_NVCC_RELEASE="13.1")).stdout
    assert compiled(out) == [CU_OBJECT]


@pytest.mark.compile
def test_an_edited_header_recompiles_the_cu_that_includes_it(copy, cuda_home):
    header = os.path.join(copy, "specs", "include", "myops", "cuda_tuning.h")
    with open(header, "w") as f:
        f.write("#pragma once\nconstexpr int kUnroll = 1;\n")
    edit(os.path.join(copy, "specs", "csrc", "kernels_cuda.cu"), '#include "ops/myops_cube.h"',
         '#include "myops/cuda_tuning.h"\n#include "ops/myops_cube.h"')
    # cache_key.os too: the library's digest (torch.compile's cache tag) covers
    # every source and header of the library, the .cu's included.
    assert compiled(scons(copy, *ARGS, environ=environ(cuda_home)).stdout) == ["cache_key.os", CU_OBJECT]
    edit(header, "kUnroll = 1", "kUnroll = 4")
    assert compiled(scons(copy, *ARGS, environ=environ(cuda_home)).stdout) == ["cache_key.os", CU_OBJECT]


def test_cuda_0_skips_the_kernels_in_one_line_and_leaves_their_registrations_out(copy, cuda_home):
    out = scons(copy, *ARGS, "CUDA=0", environ=environ(cuda_home)).stdout
    skipped = [x for x in out.splitlines() if "CUDA kernels skipped" in x]
    assert skipped == ["scons: CUDA kernels skipped (CUDA=0): specs/csrc/kernels_cuda.cu not compiled, "
                       "their dispatch: CUDA: registrations left out"]
    assert nvcc_lines(out) == [] and compiled(out) == CPP_OBJECTS
    assert all(WITHOUT in x for x in out.splitlines() if " -c " in x)
    assert CU_OBJECT not in linked(out, "myops_ext.so") and "-lcudart" not in out


def test_compile_commands_lists_the_cu_compile(copy, cuda_home):
    scons(copy, *ARGS, "compile_commands", environ=environ(cuda_home))
    with open(os.path.join(copy, "compile_commands.json")) as f:
        entries = {os.path.basename(e["file"]): e for e in json.load(f)}
    assert set(entries) >= {"kernels_cuda.cu", "kernels.cpp"}
    command = entries["kernels_cuda.cu"]["command"]
    assert command.startswith(os.path.join(cuda_home, "bin", "nvcc") + " -o ")
    assert "-gencode=arch=compute_90,code=sm_90" in command


@pytest.mark.compile
def test_the_launcher_goes_before_nvcc_out_of_the_signature(copy, cuda_home, tmp_path):
    log = tmp_path / "launcher.log"
    launcher = tmp_path / "launch"
    launcher.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec "$@"\n')
    launcher.chmod(0o755)
    out = scons(copy, *ARGS, f"LAUNCHER={launcher}", environ=environ(cuda_home, TORCH_CUDA_ARCH_LIST="9.0")).stdout
    assert compiled(out) == [CU_OBJECT]
    [call] = log.read_text().splitlines()
    assert call.startswith(os.path.join(cuda_home, "bin", "nvcc") + " -o ")
    # Without it: nothing to recompile.
    assert compiled(scons(copy, *ARGS, environ=environ(cuda_home, TORCH_CUDA_ARCH_LIST="9.0")).stdout) == []


@pytest.mark.parametrize("over, message", [
    ({"TORCH_CUDA_ARCH_LIST": "8.0;9.O"},
     "TORCH_CUDA_ARCH_LIST='8.0;9.O': '9.O' is not a CUDA architecture (e.g. '8.0', '9.0a', '9.0+PTX', "
     "'Ampere'; ';' or ' ' between them)"),
    pytest.param({"FAKE_NVCC_RELEASE": "12.4"},
                 "nvcc {home}/bin/nvcc is CUDA 12.4, but torch {version} was built with CUDA 13.0: their major "
                 "versions must match (set CUDA_HOME to a CUDA 13 toolkit, or build without the CUDA kernels: CUDA=0)",
                 marks=pytest.mark.compile),
    pytest.param({"CUDA_HOME": "{home}/missing"},
                 "torch {version} is a CUDA 13.0 build, but no nvcc was found (looked in $CUDA_HOME/bin): install "
                 "the CUDA 13 toolkit, set CUDA_HOME to it, or build without the CUDA kernels (CUDA=0)",
                 marks=pytest.mark.compile),
])
def test_a_build_that_cannot_use_nvcc_is_one_line(tmp_path, cuda_home, over, message):
    root = clone(tmp_path / "repo")
    fake_cuda_facts(root)
    with open(os.path.join(root, "build", ".torch.json")) as f:
        version = json.load(f)["facts"]["version"]
    over = {k: v.format(home=cuda_home) for k, v in over.items()}
    proc = scons(root, *ARGS, environ=environ(cuda_home, **over), check=False)
    assert proc.returncode == 2
    assert [x for x in proc.stderr.splitlines() if x.strip()] == \
        ["scons: *** " + message.format(home=cuda_home, version=version)]
    assert not os.path.exists(os.path.join(root, "build", "example"))  # nothing generated
    # `scons -h` still lists the variables, with the same line as a warning.
    helped = scons(root, *ARGS, "-h", environ=environ(cuda_home, **over), check=False)
    assert helped.returncode == 0, helped.stderr
    assert "TORCH_CUDA_ARCH_LIST: CUDA architectures" in helped.stdout and "CUDA: the example's .cu" in helped.stdout
    assert [x for x in helped.stderr.splitlines() if x.strip()] == \
        ["scons: warning: " + message.format(home=cuda_home, version=version)]


def test_cuda_1_with_a_cpu_torch_is_one_line(tmp_path):
    root = clone(tmp_path / "repo")  # the installed (CPU) torch's facts
    proc = scons(root, *ARGS, "CUDA=1", check=False)
    assert proc.returncode == 2
    [line] = [x for x in proc.stderr.splitlines() if x.strip()]
    assert line.startswith("scons: *** CUDA=1, but torch ") and "is a CPU-only build" in line
