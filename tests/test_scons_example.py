"""`scons` at the root with the real compiler: the example extension builds,
loads, rebuilds nothing when nothing changed, recompiles one object for one
edited formula, and a second checkout sharing the CacheDir compiles nothing.

One checkout is built once (the cold build is the slow part: every TU
includes libtorch's headers) and the tests below run in order on it.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from scons_helpers import clone, compiled, edit, linked, report, scons

LIB = os.path.join("build", "example", "myops_ext.so")
OBJECTS = ["MulBackward0.os", "MulBackward1.os", "ScaleBackward0.os", "module.os"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cachedir"))


@pytest.fixture(scope="module")
def cold(tmp_path_factory, cache):
    """(checkout, output of its cold `scons`)."""
    root = clone(tmp_path_factory.mktemp("example") / "checkout")
    return root, scons(root, "-j2", f"CACHEDIR={cache}").stdout


def test_cold_build_gives_a_loadable_torch_extension(cold):
    root, out = cold
    assert compiled(out) == OBJECTS
    assert report(out)[0].startswith("build/example/gen: 3 Functions: 3 regenerated")
    assert report(out)[0].endswith("; 3 objects recompiled")
    so = os.path.join(root, LIB)
    code = ("import sys, torch; sys.path.insert(0, sys.argv[1]); import myops_ext; "
            "print(myops_ext.__doc__)")
    proc = subprocess.run([sys.executable, "-c", code, os.path.dirname(so)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "example extension" in proc.stdout
    symbols = subprocess.run(["nm", "-DC", "--defined-only", so], capture_output=True, text=True).stdout
    for op in ("MulBackward0", "MulBackward1", "ScaleBackward0"):
        assert f"myops::autograd::{op}::apply(" in symbols


def test_second_build_regenerates_nothing_and_compiles_nothing(cold, cache):
    root, _ = cold
    out = scons(root, "-j2", f"CACHEDIR={cache}").stdout
    assert compiled(out) == [] and linked(out, "myops_ext.so") is None
    assert f"`{LIB}' is up to date." in out
    assert report(out) == ["build/example/gen: 3 Functions: 0 regenerated, 3 unchanged, 0 removed; "
                           "inputs unchanged (specs not parsed); 0 objects recompiled"]


def test_second_checkout_sharing_the_cachedir_compiles_nothing(cold, cache, tmp_path):
    other = clone(tmp_path / "elsewhere" / "checkout2")  # another absolute path
    out = scons(other, "-j2", f"CACHEDIR={cache}").stdout
    assert compiled(out) == []
    retrieved = sorted(os.path.basename(p) for p in re.findall(r"Retrieved `([^']+)' from cache", out))
    assert retrieved == sorted(OBJECTS + ["myops_ext.so"])
    with open(os.path.join(other, LIB), "rb") as a, open(os.path.join(cold[0], LIB), "rb") as b:
        assert a.read() == b.read()


def test_editing_one_formula_recompiles_exactly_one_object(cold, cache):
    root, _ = cold
    edit(os.path.join(root, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    out = scons(root, "-j2", f"CACHEDIR={cache}", "--autograd-explain=ScaleBackward0").stdout
    assert compiled(out) == ["ScaleBackward0.os"]
    assert linked(out, "myops_ext.so") == OBJECTS
    lines = report(out)
    assert lines[0] == ("build/example/gen: 3 Functions: 1 regenerated, 2 unchanged, 0 removed; "
                        "derivatives entry changed: 1 (ScaleBackward0); 1 object recompiled")
    assert lines[1].startswith("explain: ScaleBackward0: regenerated: derivatives entry changed")


def test_compile_commands_on_demand(cold, cache):
    root, _ = cold
    out = scons(root, f"CACHEDIR={cache}", "compile_commands").stdout
    assert compiled(out) == []
    with open(os.path.join(root, "compile_commands.json")) as f:
        entries = json.load(f)
    assert sorted(os.path.basename(e["output"]) for e in entries) == OBJECTS
    assert all(not os.path.isabs(e["file"]) for e in entries)
