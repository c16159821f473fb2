"""The example built with clang, against its shared precompiled prelude
(`-fpch-instantiate-templates`), passes the same checks as the g++ build:
opcheck, torch.compile and forward AD (tests/example/test_extension_pt2.py
and test_forward_ad.py, run in a pytest of their own against this build:
one process loads one copy of the example).  .ci/run installs clang."""

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
    assert len(objects) == len(compiled(out)) == 4
    assert all(re.search(r"-include-pch \S+/torch_prelude\.h\.pch", x) for x in objects)
    env = dict(os.environ, AGF_TEST_BUILD_SPECS=folder, AGF_TEST_CXX="clang++",
               AGF_TEST_EXTENSIONS_DIR=extensions_dir())
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *CHECKS],
                          cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"\d+ passed", proc.stdout) and " failed" not in proc.stdout
