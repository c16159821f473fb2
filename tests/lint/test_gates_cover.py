"""The lint and type gates see every package folder (issue 60): a ruff or
mypy exclude that also matches a folder of the package (ruff's
`extend-exclude = ["codegen"]` matched site_scons/autograd_scons/codegen, so
`.ci/run`'s `ruff check site_scons` linted none of the generator) makes the
gate unable to fail there.  Each gate is asked for its own file set (ruff
`--show-files`, mypy's source finding from pyproject.toml) and compared with
the package's .py files, folder by folder."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from support.spec_facts import REPO

PACKAGE = os.path.join("site_scons", "autograd_scons")

# Folders the gates leave out on purpose, and why.
RUFF_LEAVES_OUT = {os.path.join(PACKAGE, "ship", "templates")}   # a new project's files, not the package's
MYPY_LEAVES_OUT = RUFF_LEAVES_OUT | {
    # SConstructs run by SCons (names such as ARGUMENTS come from SCons's globals)
    os.path.join(PACKAGE, "jit", "sconstruct.py"),
    os.path.join(PACKAGE, "torch_patch", "patch_sconstruct.py"),
}


def _package_files(root: str) -> set[str]:
    found = set()
    for folder, dirs, files in os.walk(os.path.join(root, PACKAGE)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found.update(os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(".py"))
    return found


def _left_out_on_purpose(path: str, leaves_out: set[str]) -> bool:
    return any(path == kept or path.startswith(kept + os.sep) for kept in leaves_out)


def _missed_folders(expected: set[str], seen: set[str], leaves_out: set[str]) -> list[str]:
    missed = {os.path.dirname(p) for p in expected - seen if not _left_out_on_purpose(p, leaves_out)}
    return sorted(missed)


def ruff_files(root: str) -> set[str]:
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--show-files", "site_scons"], cwd=root,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return {os.path.relpath(line.strip(), root) for line in r.stdout.splitlines() if line.strip().endswith(".py")}


def mypy_files(root: str) -> set[str]:
    from mypy.main import process_options
    cwd = os.getcwd()
    os.chdir(root)   # mypy reads pyproject.toml, and resolves its paths, from the working folder
    try:
        sources, _ = process_options([], stdout=io.StringIO(), stderr=io.StringIO())
    finally:
        os.chdir(cwd)
    return {os.path.normpath(s.path) for s in sources if s.path}


@pytest.mark.parametrize("gate, files, leaves_out", [("ruff", ruff_files, RUFF_LEAVES_OUT),
                                                     ("mypy", mypy_files, MYPY_LEAVES_OUT)])
def test_each_gate_sees_every_package_folder(gate, files, leaves_out):
    missed = _missed_folders(_package_files(REPO), files(REPO), leaves_out)
    assert not missed, f"{gate}'s configured file set misses these package folders: {missed}"


def test_a_folder_name_excluded_anywhere_is_caught(tmp_path):
    """The check itself can fail: a copy of the package with the unanchored
    exclude of before issue 60 is reported as missing the generator."""
    os.makedirs(tmp_path / PACKAGE / "codegen" / "parse")
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    (tmp_path / PACKAGE / "codegen" / "__init__.py").write_text("")
    (tmp_path / PACKAGE / "codegen" / "parse" / "x.py").write_text("")
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nextend-exclude = ["codegen"]\n')
    missed = _missed_folders(_package_files(str(tmp_path)), ruff_files(str(tmp_path)), RUFF_LEAVES_OUT)
    assert missed == [os.path.join(PACKAGE, "codegen"), os.path.join(PACKAGE, "codegen", "parse")]
