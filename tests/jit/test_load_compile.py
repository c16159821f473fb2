"""load() with the real compiler: four fresh processes load the example
(specs/) at once from an empty folder; one builds, and every one gets ops
that gradcheck and match their compositions of built-in ops; a fifth
process then compiles nothing.  And the cuda tier: under torch 2.14.1 (the
second venv, tests/support/cuda_helpers.py) load() builds in another folder than
under 2.13 and compiles the `.cu` kernels with nvcc."""

import os
import subprocess
import sys

import pytest

from support import extension_checks, proof_share
from support.cuda_helpers import cuda_venv
from support.load_helpers import environ, example, real_compiler, run, start
from support.scons_helpers import compiled
from support.spec_facts import REPO

# Run after load() in each process: the example's checks (tests/support/extension_checks.py).
CHECKS = f"""
sys.path.insert(0, {os.path.join(REPO, 'tests')!r})
from support import extension_checks as checks
names = list(checks.case_functions())
for name in names:
    checks.check_gradcheck(ops, name)
    checks.check_matches_builtin(ops, name)
print("CHECKED", len(names))
"""


@pytest.mark.compile
def test_four_fresh_processes_load_the_example_and_gradcheck(tmp_path):
    call = dict(example(tmp_path / "specs"), build_directory=str(tmp_path / "build"), verbose=True)
    env = real_compiler()
    procs = [start(call, env, CHECKS, fresh=True) for _ in range(4)]
    outs = [p.communicate(timeout=1800) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [o[0][-3000:] + o[1][-3000:] for o in outs]
    assert sum(1 for out, _ in outs if compiled(out)) == 1
    n = len(extension_checks.case_functions())
    assert all(f"CHECKED {n}" in out for out, _ in outs)
    again = run(call, env, CHECKS, fresh=True).stdout
    assert compiled(again) == [] and f"CHECKED {n}" in again


FOLDER_KEY = ("import os, sys; sys.path.insert(0, os.path.join(sys.argv[1], 'site_scons')); "
              "from autograd_scons.jit import loader; print(loader._folder_key())")
REGISTERED = ("print('CUDA', [op for op in ('row_sum', 'cube', 'soft_clip', 'bmul') if any("
              "l.startswith('CUDA: registered') for l in torch._C._dispatch_dump('myops::' + op).splitlines())])")


def _venv_and_folder_keys():
    """(the torch 2.14.1 venv's python, load()'s folder key under each torch)."""
    python, why = cuda_venv()
    if why:
        (pytest.fail if os.environ.get("AGF_CUDA_TIER_REQUIRED") else pytest.skip)(why)
    keys = [subprocess.run([p, "-c", FOLDER_KEY, REPO], capture_output=True, text=True, check=True,
                           env=environ(cxx="g++")).stdout.strip() for p in (sys.executable, python)]
    return python, keys


@pytest.mark.cuda
@pytest.mark.compile
def test_under_torch_2_14_load_keys_another_folder(tmp_path):
    """(on every commit; the build below takes turns)"""
    _, keys = _venv_and_folder_keys()
    assert keys[0] != keys[1] and "torch2.14.1_cu130_" in keys[1] and "_cpu_" in keys[0], keys


# load()'s whole build under torch 2.14.1 runs in one commit's CI in three
# (tests/support/proof_share.py): the cuda tier compiles the same .cu with
# nvcc under 2.14.1 on every commit, and the key above is checked on every commit.
@pytest.mark.cuda
@pytest.mark.compile
@proof_share.in_turn(1, "load()'s build under torch 2.14.1")
def test_under_torch_2_14_load_uses_another_folder_and_builds_the_cu(tmp_path):
    python, keys = _venv_and_folder_keys()
    assert keys[0] != keys[1] and "torch2.14.1_cu130_" in keys[1] and "_cpu_" in keys[0], keys
    call = dict(example(tmp_path / "specs"), verbose=True)
    env = dict(real_compiler(), AUTOGRAD_EXTENSIONS_DIR=str(tmp_path / "ext"), TORCH_CUDA_ARCH_LIST="8.0")
    out = run(call, env, REGISTERED, python=python, timeout=1800).stdout
    [nvcc] = [line for line in out.splitlines() if "nvcc" in line and "kernels_cuda.cu" in line]
    assert "-gencode=arch=compute_80,code=sm_80" in nvcc
    assert os.path.isfile(os.path.join(tmp_path, "ext", "myops", keys[1], "myops.so"))
    assert out.strip().splitlines()[-1] == "CUDA ['row_sum', 'cube', 'soft_clip']"


@pytest.mark.compile
def test_a_killed_real_build_leaves_the_next_load_correct(tmp_path):
    """SIGKILL of the builder during a compile, then during a link: the next
    load() in a fresh process builds at once (no stale lock) and its ops
    gradcheck, the formula edit included."""
    import signal
    import time
    from support.scons_helpers import edit
    call = dict(example(tmp_path / "specs"), build_directory=str(tmp_path / "build"), verbose=True)
    wrapper = tmp_path / "cxx"   # g++, held open at one step while `.stall` (in the build folder) names it
    wrapper.write_text("#!/bin/sh\nif [ -f .stall ]; then step=$(cat .stall); case \"$* $step\" in\n"
                       "  *' -c '*' compile'|*-shared*' link') touch stalled; sleep 120;; esac; fi\n"
                       "exec g++ \"$@\"\n")
    wrapper.chmod(0o755)
    env = dict(real_compiler(), CXX=str(wrapper))
    folder = call["build_directory"]
    os.makedirs(folder)
    for step in ("compile", "link"):
        if step == "link":
            edit(call["derivatives"], "self: grad * alpha", "self: alpha * grad")
        with open(os.path.join(folder, ".stall"), "w") as f:
            f.write(step)
        builder = start(call, env, fresh=True)
        while not os.path.exists(os.path.join(folder, "stalled")):
            assert builder.poll() is None, builder.communicate()
            time.sleep(0.1)
        os.kill(builder.pid, signal.SIGKILL)
        builder.communicate()
        os.unlink(os.path.join(folder, ".stall"))
        os.unlink(os.path.join(folder, "stalled"))
        out = run(call, env, CHECKS, timeout=1800, fresh=True).stdout
        n = len(extension_checks.case_functions())
        assert f"CHECKED {n}" in out and "waiting for pid" not in out
        assert compiled(out), out   # it did build (what the killed run could not finish)
