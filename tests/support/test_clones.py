"""The tests' and the benchmarks' copies of this checkout hold every tracked
file of the tool and the generator.  A copy that drops one still builds when
the installed package is this checkout's (the SConstruct imports it), and
fails only where the copy's own package is the one imported: a fresh venv,
the cuda tier, CI's benchmarks."""

from __future__ import annotations

import os
import subprocess

import pytest

from support.scons_helpers import clone
from support.spec_facts import REPO


def _tracked(*folders) -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z", *folders], cwd=REPO, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"this checkout is not a git work tree, so its tracked files are unknown ({e})")
    return [p for p in out.stdout.split("\0") if p and os.path.exists(os.path.join(REPO, p))]


def _missing(copy: str) -> list[str]:
    files = _tracked("site_scons", "codegen", "SConstruct", "specs")
    assert len(files) > 100
    return [p for p in files if not os.path.exists(os.path.join(copy, p))]


def test_the_tests_clone_holds_every_tracked_file_of_the_tool(tmp_path):
    assert _missing(clone(tmp_path / "copy", torch_facts=False)) == []


def test_the_benchmarks_clone_holds_every_tracked_file_of_the_tool(tmp_path):
    import sys
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    try:
        import _common
    finally:
        sys.path.remove(os.path.join(REPO, "benchmarks"))
    assert _missing(_common.clone(str(tmp_path / "copy"))) == []


def test_a_clone_leaves_out_the_build_folders_at_the_top_and_the_linters_caches(tmp_path):
    """(a clone is made for almost every test of the fast tier: a copied
    .mypy_cache, 40 MB, was most of its system time)"""
    probes = [os.path.join(REPO, "build_clone_probe"), os.path.join(REPO, ".mypy_cache", "clone_probe")]
    for probe in probes:
        os.makedirs(probe)
    try:
        copy = clone(tmp_path / "copy", torch_facts=False)
    finally:
        for probe in probes:
            os.rmdir(probe)
    assert not os.path.exists(os.path.join(copy, "build_clone_probe"))
    assert not os.path.exists(os.path.join(copy, ".mypy_cache"))


def test_a_clone_keeps_the_links_of_the_checkout_as_links(tmp_path):
    """`codegen` is a link in git: copied as a folder it was a second
    generator beside the package's (300 files more in every clone)."""
    copy = clone(tmp_path / "copy", torch_facts=False)
    assert os.path.islink(os.path.join(copy, "codegen"))
    assert os.readlink(os.path.join(copy, "codegen")) == os.readlink(os.path.join(REPO, "codegen"))
    assert os.path.realpath(os.path.join(copy, "codegen")).startswith(os.path.realpath(copy) + os.sep)
