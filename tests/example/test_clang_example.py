"""The example built with clang, against its shared precompiled prelude
(`-fpch-instantiate-templates`), passes the same checks as the g++ build:
opcheck, torch.compile and forward AD (tests/example/test_extension_pt2.py
and test_forward_ad.py, run in a pytest of their own against this build:
one process loads one copy of the example).  So do the edit and
override tests of tests/example/test_scons_example.py built with clang, and
the edit-count tests of tests/tool/test_scons_incremental.py with the
stand-in compiler named as clang (the precompiled prelude's rules differ
by family).  .ci/run installs clang."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from support.scons_helpers import REPO, compiled, extensions_dir, scons

pytestmark = [pytest.mark.compile,
              pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ is not installed")]

CHECKS = ["tests/example/test_extension_pt2.py", "tests/example/test_forward_ad.py"]


def test_the_clang_build_passes_opcheck_torch_compile_and_forward_ad(tmp_path):
    folder = str(tmp_path / "build")
    out = scons(REPO, "UNITY=2", "-j2", "OPT=-O0", f"BUILD={folder}", "CXX=clang++").stdout
    [pre] = [x for x in out.splitlines() if " -x c++-header " in x]
    assert "-fpch-instantiate-templates" in pre.split()
    objects = [x for x in out.splitlines() if re.search(r"-o \S+\.os -c ", x)]
    assert len(objects) == len(compiled(out)) == 5   # and the digest's TU, which includes nothing:
    assert all(bool(re.search(r"-include-pch \S+/torch_prelude\.h\.pch", x)) == ("cache_key.os" not in x)
               for x in objects)
    env = dict(os.environ, AGF_TEST_BUILD_SPECS=folder, AGF_TEST_CXX="clang++",
               AGF_TEST_EXTENSIONS_DIR=extensions_dir())
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *CHECKS],
                          cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"\d+ passed", proc.stdout) and " failed" not in proc.stdout


def _pytest_child(args, **env):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *args],
                          cwd=REPO, env=dict(os.environ, AGF_TEST_EXTENSIONS_DIR=extensions_dir(), **env),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc.stdout


EDIT_AND_OVERRIDE = ("second_build or editing_one_formula or edited_op_kernel or duplicate_symbol")


def test_the_edit_and_override_tests_pass_built_with_clang():
    out = _pytest_child(["tests/example/test_scons_example.py", "-k", EDIT_AND_OVERRIDE], AGF_TEST_CXX="clang++")
    assert re.search(r"\b4 passed", out) and " failed" not in out and "skipped" not in out, out[-2000:]


def test_the_edit_count_tests_pass_with_the_stand_in_named_clang():
    out = _pytest_child(["tests/tool/test_scons_incremental.py", "-m", "not compile"], AGF_TEST_STANDIN="clang++")
    assert re.search(r"\d+ passed", out) and " failed" not in out, out[-2000:]
