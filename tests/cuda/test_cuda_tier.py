"""The `cuda` tier: the example built with its CUDA kernels by the real nvcc
against torch 2.14.1 (a CUDA 13.0 build), in a second virtual environment
(tests/support/cuda_helpers.py: `AGF_CUDA_VENV`, or the one .ci/run creates), from a
fresh clone.  Skips, saying how to get what is missing, without that venv
or without nvcc.  Selected by `-m cuda`; also marked `compile`.

One build for two architectures, then checks of that build: the objects
hold SASS for each, the library loads with CUDA kernels registered, the
example's full checks (gradcheck, opcheck, torch.compile, forward AD, and
tests/cuda/test_cuda_kernels.py, whose GPU half skips without a GPU) pass under
torch 2.14.1, and so do the differential suite
(tests/codegen/emit/op_kernels/test_aten_differential.py, on CPU tensors), torch.compile's
caches after a formula edit (tests/tool/test_compile_cache.py) and the proof of
torch's own Functions patched into torch 2.14.1 (tests/torch_patch/test_patch_opinfo.py).  A second clone sharing the CacheDir: all hits, then an
architecture change recompiles the `.cu` object only, and a `dispatch:
CUDA:` kernel that no source defines fails the load naming it."""

import os
import re
import struct
import subprocess
import time

import pytest

from support import proof_share

from support.cuda_helpers import cuda_venv
from support.scons_helpers import clone, compiled, edit, scons

from autograd_scons.buildenv import cuda_flags

pytestmark = [pytest.mark.cuda, pytest.mark.compile]

ARCHS = "8.0;9.0"
# As tests/support/example_build.py builds (BUILD=$AGF_TEST_BUILD_SPECS), so that
# the checks run below find this build up to date.
ARGS = ("UNITY=2", "-j2", "OPT=-O0", "BUILD=build", "EXAMPLE=specs")
CU_OBJECT = os.path.join("build", "example", "csrc", "kernels_cuda.os")
LIBRARY = os.path.join("build", "example", "myops_ext.so")
CHECKS = ["tests/cuda/test_cuda_kernels.py", "tests/example/test_extension_pt2.py", "tests/example/test_forward_ad.py"]
DIFFERENTIAL = "tests/codegen/emit/op_kernels/test_aten_differential.py"
PATCH_PROOF = "tests/torch_patch/test_patch_opinfo.py"
COMPILE_CACHE = "tests/tool/test_compile_cache.py"


@pytest.fixture(scope="module")
def venv():
    python, why = cuda_venv()
    if python is not None and cuda_flags.find_nvcc(os.environ) is None:
        why = ("no nvcc ($CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda/bin): install the CUDA 13 "
               "toolkit or set CUDA_HOME")
    if why:
        # .ci/run sets it: there the tier must run.
        (pytest.fail if os.environ.get("AGF_CUDA_TIER_REQUIRED") else pytest.skip)(why)
    return python


def build(root, python, archs=ARCHS, *extra):
    start = time.monotonic()
    proc = scons(root, *ARGS, *extra, python=python, environ={"TORCH_CUDA_ARCH_LIST": archs})
    print(f"scons {' '.join(extra)} TORCH_CUDA_ARCH_LIST={archs}: {time.monotonic() - start:.1f} s wall")
    return proc.stdout


@pytest.fixture(scope="module")
def first(venv, tmp_path_factory):
    """(clone, CacheDir, the first build's stdout)."""
    tmp = tmp_path_factory.mktemp("cuda-tier")
    root = clone(tmp / "a", torch_facts=False)  # the venv's torch answers for itself
    cache = str(tmp / "cache")
    return root, cache, build(root, venv, ARCHS, f"CACHEDIR={cache}")


def in_venv(python, root, code):
    return subprocess.run([python, "-c", code], cwd=root, capture_output=True, text=True)


def fatbin_sass(obj):
    """The SASS architectures in an object's CUDA fat binary (`.nv_fatbin`):
    each entry's header gives its kind (2: ELF, 1: PTX) and its `sm`."""
    out = obj + ".fatbin"
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", obj, out], check=True)
    with open(out, "rb") as f:
        data = f.read()
    found, off = [], 0
    while off + 16 <= len(data):
        magic, _, header, size = struct.unpack_from("<IHHQ", data, off)
        assert magic == 0xBA55ED50, hex(magic)
        p, end = off + header, off + header + size
        while p < end:
            kind, _, entry_header, padded = struct.unpack_from("<HHII", data, p)
            if kind == 2:
                found.append(struct.unpack_from("<I", data, p + 28)[0])
            p += entry_header + padded
        off = end
    return sorted(found)


def test_the_cu_is_compiled_by_nvcc_for_each_architecture(first):
    root, _, out = first
    [line] = [x for x in out.splitlines() if "nvcc" in x and "kernels_cuda.cu" in x]
    assert "-gencode=arch=compute_80,code=sm_80" in line and "-gencode=arch=compute_90,code=sm_90" in line
    assert fatbin_sass(os.path.join(root, CU_OBJECT)) == [80, 90]


def test_the_library_loads_with_cuda_kernels_registered(first, venv):
    root = first[0]
    code = ("import sys, torch; sys.path.insert(0, 'specs/python'); import myops; myops.load(sys.argv[1]); "
            "print([op for op in ('row_sum', 'cube', 'soft_clip', 'bmul') if any(l.startswith('CUDA: registered') "
            "for l in torch._C._dispatch_dump('myops::' + op).splitlines())])")
    proc = subprocess.run([venv, "-c", code, LIBRARY], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "['row_sum', 'cube', 'soft_clip']"


def test_a_second_build_compiles_nothing(first, venv):
    assert compiled(build(first[0], venv)) == []


def pytest_in_venv(python, root, modules, **environ):
    """Test modules of the clone `root` run by the venv's pytest: its stdout;
    they all pass."""
    proc = subprocess.run([python, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider", *modules],
                          cwd=root, capture_output=True, text=True, env=dict(os.environ, **environ))
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " failed" not in proc.stdout and " passed" in proc.stdout
    return proc.stdout


# This tier's longer runs under 2.14.1 take turns with CI's other heaviest
# modules, one commit's CI in three each, so that each commit's CI keeps to
# its budget (docs/testing.md): the example's checks and the differential
# suite (under 2.13.0 they run on every commit) in one turn, torch.compile's
# caches (under 2.13.0 in another turn) in another.  The patch's proof under
# 2.14.1 takes turns with the proof under 2.13.0.


@proof_share.in_turn(0, "this check under torch 2.14.1")
def test_the_example_checks_pass_under_torch_2_14(first, venv):
    pytest_in_venv(venv, first[0], CHECKS, AGF_TEST_BUILD_SPECS="build", TORCH_CUDA_ARCH_LIST=ARCHS)


@proof_share.in_turn(2, "this check under torch 2.14.1")
def test_torch_compiles_caches_see_an_edited_formula_under_torch_2_14(venv, tmp_path):
    """A library's digest in torch.compile's cache key tag (codegen/emit/cache_key.py)
    under torch 2.14.1, whose `torch.compiler.config.cache_key_tag` is 2.13's:
    on CPU tensors, inductor compiling C++."""
    pytest_in_venv(venv, clone(tmp_path / "cache", torch_facts=False), [COMPILE_CACHE])


@proof_share.in_turn(0, "this check under torch 2.14.1")
def test_the_differential_suite_agrees_under_torch_2_14(venv, tmp_path):
    """Our generated Autograd kernels, Autocast kernels and vmap plumbing against ATen's under torch 2.14.1 (on
    CPU tensors: the suite builds with the host compiler alone)."""
    out = pytest_in_venv(venv, clone(tmp_path / "diff", torch_facts=False), [DIFFERENTIAL])
    [(pairs, agree)] = set(re.findall(r"^(\d+) scenario pairs, (\d+) agree$", out, re.M))
    assert int(pairs) > 0 and agree == pairs, out[-3000:]
    # autocast and vmap of the extension's ops against ATen's (issue 53), CPU tensors
    [(a_pairs, a_agree, v_pairs, v_agree)] = set(re.findall(
        r"^(\d+) autocast pairs, (\d+) agree; (\d+) vmap pairs, (\d+) agree$", out, re.M))
    assert int(a_pairs) > 0 and int(v_pairs) > 0 and (a_agree, v_agree) == (a_pairs, v_pairs), out[-3000:]


@proof_share.takes_turns("2.14", "the patch's proof under torch 2.14.1")
def test_torchs_own_functions_patched_agree_under_torch_2_14(venv, tmp_path):
    """`patch-torch --all` of torch 2.14.1's own specs, proven on its OpInfo
    samples (on CPU tensors) as under 2.13: byte-identical gradients."""
    # (the Functions alone: with --kernels it is a command, docs/testing.md, for CI's time;
    # this commit's share of the ops, and under 2.14.1 on every other pair of shares only)
    out = pytest_in_venv(venv, clone(tmp_path / "patch", torch_facts=False), [PATCH_PROOF, "-s"],
                         AGF_PATCH_PROOF_KERNELS="0", AGF_PROOF_SHARE=proof_share.as_environ())
    assert re.search(r"^\d+ ops, \d+ samples, (\d+) gradients compared, \1 equal; ", out, re.M), out[-3000:]


def test_a_second_clone_hits_the_cache_and_an_arch_change_recompiles_the_cu_only(first, venv, tmp_path):
    _, cache, _ = first
    root = clone(tmp_path / "b", torch_facts=False)
    hits = build(root, venv, ARCHS, f"CACHEDIR={cache}")
    assert compiled(hits) == [] and f"Retrieved `{CU_OBJECT}' from cache" in hits
    out = build(root, venv, "9.0", f"CACHEDIR={cache}")
    assert compiled(out) == ["kernels_cuda.os"]
    assert fatbin_sass(os.path.join(root, CU_OBJECT)) == [90]
    assert compiled(build(root, venv, "9.0")) == []

    # A CUDA kernel that no source defines: the build names it at its yaml
    # line (the check after linking), and leaves no library to load.
    edit(os.path.join(root, "specs", "native_functions.yaml"), "    CompositeExplicitAutograd: masked_scale\n",
         "    CompositeExplicitAutograd: masked_scale\n    CUDA: masked_scale_cuda\n")
    proc = scons(root, *ARGS, python=venv, environ={"TORCH_CUDA_ARCH_LIST": "9.0"}, check=False)
    assert proc.returncode != 0 and "native_functions.yaml:" in proc.stderr, proc.stderr[-2000:]
    assert "'masked_scale_cuda' is declared here but no object defines it" in proc.stderr
    assert not os.path.exists(os.path.join(root, LIBRARY))
