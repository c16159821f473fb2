"""The example's checks (gradcheck, against built-in torch, in-place and
out=, saved tensors released, no graph without requires_grad) on a library
built in a clone, in a fresh interpreter (not a test module): for the tests
whose builds go through launchers and other hosts
(tests/buildenv/test_launcher.py, test_distcc_hosts.py, test_sccache_hosts.py).

    check_example_library(clone_root, os.path.join(clone_root, "build/example/myops_ext.so"))
"""

import os
import subprocess
import sys

from support.spec_facts import REPO

CHECK_EXTENSION = """
import sys
sys.path[:0] = [{tests!r}, {python!r}]
import myops
from support import extension_checks as checks
ops = myops.load({lib!r})
for case in checks.CASE_NAMES:
    checks.check_gradcheck(ops, case)
    checks.check_matches_builtin(ops, case)
checks.check_inplace_and_out(ops)
checks.check_saved_tensors_released(ops)
checks.check_no_graph_without_requires_grad(ops)
print("checked", len(checks.CASE_NAMES))
"""


def check_example_library(root: str, lib: str) -> str:
    """Run the checks on `lib` (the example built in the clone `root`);
    fails the test with their output unless every check passes."""
    code = CHECK_EXTENSION.format(tests=os.path.join(REPO, "tests"), python=os.path.join(root, "specs", "python"),
                                  lib=lib)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"the library's checks failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert proc.stdout.startswith("checked ")
    return proc.stdout
