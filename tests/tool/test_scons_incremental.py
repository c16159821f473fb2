"""What `scons` rebuilds after each kind of edit, and how it survives damage.

These runs use tests/support/fakecxx.sh as the compiler: SCons decides what to
rebuild exactly as with g++ (same graph, same signatures), the compiler just
does not spend 20 s per TU.  tests/example/test_scons_example.py does the same with
the real compiler and loads the result.  The edit scenarios are the ones
tests/codegen/engine/test_incremental.py runs on codegen.engine.incremental alone (tests/support/scenarios.py).
"""

import os
import shutil

import pytest

from support import scenarios
from support.scons_helpers import TINY_ARGS, clone, compiled, edit, linked, report, scons, snapshot, tree

TINY = ("tests", "fixtures", "tiny_ext")  # Functions only: counts stay about Functions
ARGS = TINY_ARGS
GEN = os.path.join("build", "example", "gen")
LIB = "myops_ext.so"
OWN_OBJECTS = ["module.os"]  # the fixture's hand-written C++
# the cold layout: one bucket, one binding TU, the digest of the generated code (codegen/emit/cache_key.py)
ALL_OBJECTS = sorted(["bucket_0.os", "bindings_0.os", "cache_key.os"] + OWN_OBJECTS)


@pytest.fixture
def proj(tiny_checkout, tmp_path):
    """A private copy of the built checkout (mtimes kept: it is up to date)."""
    return shutil.copytree(tiny_checkout[0], tmp_path / "repo", symlinks=True)


def test_cold_build_compiles_everything(tiny_checkout):
    out = tiny_checkout[1]
    assert compiled(out) == ALL_OBJECTS
    n = len(scenarios.OPS)
    assert report(out)[0].startswith(f"build/example/gen: {n} Functions: {n} regenerated, 0 unchanged, 0 removed")


def path(proj, *parts):
    return os.path.join(proj, *parts)


# The edits of kinds the fast tier keeps another case of run in the full tier
# (a name that is no scenario's fails here, at collection).
FULL_TIER_EDITS = ("renumbering", "entry removed", "formula saves more", "schema")
assert set(FULL_TIER_EDITS) <= set(scenarios.BY_NAME), set(FULL_TIER_EDITS) - set(scenarios.BY_NAME)


@pytest.mark.parametrize("sc", [pytest.param(s, marks=pytest.mark.compile) if s.name in FULL_TIER_EDITS else s
                                for s in scenarios.EDITS], ids=lambda s: s.name)
def test_edit_recompiles_exactly_the_regenerated_functions(proj, sc):
    sc.apply(path(proj, *TINY))
    out = scons(proj, *ARGS).stdout
    assert compiled(out) == sc.objects
    relinked = bool(sc.objects)
    assert linked(out, LIB) == (sorted(sc.linked + OWN_OBJECTS) if relinked else None)
    n, regen = len(sc.ops), len(sc.regenerated)
    line = report(out)[0]
    assert line.startswith(f"build/example/gen: {n} Functions: {regen} regenerated, {n - regen} unchanged, "
                           f"{len(sc.removed)} removed")
    assert ("inputs unchanged (specs not parsed)" in line) == (not sc.parsed)
    assert sorted(os.listdir(path(proj, GEN, "functions"))) == sorted(
        [f"{op}.{x}" for op in sc.ops for x in ("cpp", "h")])
    if relinked:  # and then it is up to date
        again = scons(proj, *ARGS).stdout
        assert compiled(again) == [] and f"`build/example/{LIB}' is up to date." in again
    else:
        assert f"`build/example/{LIB}' is up to date." in out


@pytest.mark.compile
def test_renumbering_explains_the_rename(proj):
    scenarios.BY_NAME["renumbering"].apply(path(proj, *TINY))
    out = scons(proj, *ARGS, "--autograd-explain=MulBackward2").stdout
    assert "explain: MulBackward2: regenerated: renamed from MulBackward1" in "\n".join(report(out))


@pytest.mark.parametrize("damage", [pytest.param("corrupt", marks=pytest.mark.compile), "truncated"])
def test_damaged_manifest_warns_once_and_recompiles_nothing(proj, damage):
    m = path(proj, GEN, ".autograd_manifest")
    data = open(m, "rb").read()
    data = data.replace(b"MulBackward0", b"MulBackwarX0", 1) if damage == "corrupt" else data[:100]
    open(m, "wb").write(data)
    proc = scons(proj, *ARGS)
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "checksum mismatch" in warnings[0] and "regenerating from scratch" in warnings[0]
    assert compiled(proc.stdout) == [] and linked(proc.stdout, LIB) is None
    again = scons(proj, *ARGS)
    assert "warning" not in again.stderr and "inputs unchanged" in report(again.stdout)[0]


KILL_AFTER_FIRST_WRITE = """
import os, signal
_replace = os.replace
def _die_after(a, b):  # every generated file ends in an os.replace
    _replace(a, b)
    os.kill(os.getpid(), signal.{sig})
os.replace = _die_after
"""


# (both in the full tier: the fast tier keeps test_interrupted_builds.py's SIGKILL sample)
@pytest.mark.parametrize("sig", [pytest.param("SIGKILL", marks=pytest.mark.compile),
                                 pytest.param("SIGINT", marks=pytest.mark.compile)])   # SIGINT: Ctrl-C
def test_killed_generation_then_build_equals_clean_build(proj, tmp_path, sig):
    before = snapshot(path(proj, GEN))
    for _, old, new in (scenarios.FORMULA, scenarios.FORMULA_MUL):
        edit(path(proj, *TINY, "derivatives.yaml"), old, new)
    killed = scons(proj, *ARGS, prelude=KILL_AFTER_FIRST_WRITE.format(sig=sig), check=False)
    if sig == "SIGKILL":
        assert killed.returncode == -9
    else:  # KeyboardInterrupt: SCons stops with its build-error exit code, no traceback
        assert killed.returncode == 2 and "Traceback" not in killed.stderr, killed.stderr[-2000:]
    out = scons(proj, *ARGS).stdout
    # No manifest survived the kill: the cold layout, both Functions in the
    # bucket, and the digest of the edited code.
    assert compiled(out) == ["bucket_0.os", "cache_key.os"]
    clean = clone(tmp_path / "clean")
    for f in ("native_functions.yaml", "derivatives.yaml"):
        shutil.copy(path(proj, *TINY, f), path(clean, *TINY, f))
    scons(clean, *ARGS)
    assert tree(path(proj, GEN)) == tree(path(clean, GEN))
    # Only what differs was rewritten: every file with its old bytes kept its mtime.
    after = snapshot(path(proj, GEN))
    kept = [p for p in after if p in before and before[p][1] == after[p][1]]
    assert kept and [p for p in kept if before[p][0] != after[p][0]] == []
    assert compiled(scons(proj, *ARGS).stdout) == []


@pytest.mark.compile
def test_yaml_error_is_one_located_line_and_touches_nothing(proj):
    d = path(proj, *TINY, "derivatives.yaml")
    good = open(d).read()
    edit(d, *scenarios.YAML_ERROR[1:])
    before = snapshot(path(proj, "build"))
    proc = scons(proj, *ARGS, check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert len(errors) == 1 and "derivatives.yaml:" in errors[0] and "malformed YAML" in errors[0]
    assert compiled(proc.stdout) == []
    assert snapshot(path(proj, "build")) == before
    open(d, "w").write(good)
    out = scons(proj, *ARGS).stdout
    assert compiled(out) == [] and "inputs unchanged" in report(out)[0]


@pytest.mark.compile
def test_clean_removes_generated_sources_then_build_restores_them(proj):
    scons(proj, "-c", *ARGS)
    assert not os.path.exists(path(proj, GEN))
    assert not os.path.exists(path(proj, "build", "example", LIB))
    out = scons(proj, *ARGS).stdout
    assert compiled(out) == ALL_OBJECTS


def test_dry_run_reports_and_writes_nothing(proj):
    edit(path(proj, *TINY, "derivatives.yaml"), *scenarios.FORMULA[1:])
    before = snapshot(path(proj, "build"))
    out = scons(proj, "-n", *ARGS).stdout
    assert "would be 1 regenerated" in report(out)[0]
    assert snapshot(path(proj, "build")) == before
    assert compiled(scons(proj, *ARGS).stdout) == scenarios.BY_NAME["formula"].objects


def test_bad_tool_argument_is_one_line_error(proj):
    edit(path(proj, *TINY, "SConscript"), 'namespace="myops::autograd"', 'namespace="myops autograd"')
    proc = scons(proj, *ARGS, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert proc.returncode == 2 and len(errors) == 1
    assert "AutogradFunctions('gen'): namespace 'myops autograd' is not a C++ namespace" in errors[0]
