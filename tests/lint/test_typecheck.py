"""mypy checks the package across its modules (issue 51): every import of
`autograd_scons` resolves to its file (the folders are the import names), so
a wrong type passed from one module to another fails `.ci/run`'s mypy, with
pyproject.toml's settings (ignore_missing_imports for third-party modules
only, strict Optional)."""

import os
import shutil
import subprocess
import sys

import pytest

from support.spec_facts import REPO

pytestmark = pytest.mark.compile   # (a cold mypy run over the package: ~20 s)

PLANTED = """\
from autograd_scons.codegen.engine.incremental import update


def planted() -> None:
    update("gen", "native_functions.yaml")   # a path where a FunctionsRequest is due
"""


def _mypy(root) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=root, capture_output=True,
                          text=True, timeout=600)


def test_a_wrong_type_across_modules_fails_mypy(tmp_path):
    shutil.copytree(os.path.join(REPO, "site_scons", "autograd_scons"), tmp_path / "site_scons" / "autograd_scons",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(REPO, "pyproject.toml"), tmp_path)
    clean = _mypy(tmp_path)
    assert clean.returncode == 0, clean.stdout[-3000:]
    (tmp_path / "site_scons" / "autograd_scons" / "tool" / "planted.py").write_text(PLANTED)
    r = _mypy(tmp_path)
    assert r.returncode == 1, r.stdout[-3000:]
    assert 'planted.py:5: error: Argument 2 to "update" has incompatible type "str"; expected "FunctionsRequest"' \
        in r.stdout, r.stdout[-3000:]
