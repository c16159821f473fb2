"""What `scons` rebuilds after each kind of edit, and how it survives damage.

These runs use tests/fakecxx.py as the compiler: SCons decides what to
rebuild exactly as with g++ (same graph, same signatures), the compiler just
does not spend 20 s per TU.  tests/test_scons_example.py does the same with
the real compiler and loads the result.
"""

import os
import shutil

import pytest

from scons_helpers import FAKE_CXX, clone, compiled, edit, linked, report, scons, tree

TINY = ("tests", "fixtures", "tiny_ext")  # Functions only: counts stay about Functions
ARGS = ("-j2", f"CXX={FAKE_CXX}", f"EXAMPLE={'/'.join(TINY)}")
GEN = os.path.join("build", "example", "gen")
LIB = "myops_ext.so"
ALL_OBJECTS = ["MulBackward0.os", "MulBackward1.os", "ScaleBackward0.os", "module.os"]
MUL_SCALAR = """- name: mul.Scalar(Tensor self, Scalar other) -> Tensor
  self: grad * other
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = clone(tmp_path_factory.mktemp("fake") / "repo")
    out = scons(root, *ARGS).stdout
    assert compiled(out) == ALL_OBJECTS
    assert report(out)[0].startswith("build/example/gen: 3 Functions: 3 regenerated, 0 unchanged, 0 removed")
    return root


@pytest.fixture
def proj(built, tmp_path):
    """A private copy of the built checkout (mtimes kept: it is up to date)."""
    return shutil.copytree(built, tmp_path / "repo", symlinks=True)


def path(proj, *parts):
    return os.path.join(proj, *parts)


def test_noop_build_regenerates_and_recompiles_nothing(proj):
    out = scons(proj, *ARGS).stdout
    assert compiled(out) == [] and linked(out, LIB) is None
    assert f"`build/example/{LIB}' is up to date." in out
    assert report(out) == ["build/example/gen: 3 Functions: 0 regenerated, 3 unchanged, 0 removed; "
                           "inputs unchanged (specs not parsed); 0 objects recompiled"]


def test_schema_edit_recompiles_only_the_matched_op(proj):
    for f in ("native_functions.yaml", "derivatives.yaml"):
        edit(path(proj, *TINY, f), "scale(Tensor self, float alpha) -> Tensor",
             "scale(Tensor self, float alpha, *, bool fast=False) -> Tensor")
    out = scons(proj, *ARGS).stdout
    assert compiled(out) == ["ScaleBackward0.os"]
    assert linked(out, LIB) == ALL_OBJECTS
    assert "1 regenerated, 2 unchanged, 0 removed; derivatives entry changed: 1 (ScaleBackward0)" \
        in report(out)[0]


def test_renumbering_recompiles_exactly_the_renamed_ops(proj):
    edit(path(proj, *TINY, "native_functions.yaml"), "- func: myops::mul.Scalar",
         "- func: myops::mul.int(Tensor self, int other) -> Tensor\n  variants: function\n\n"
         "- func: myops::mul.Scalar")
    edit(path(proj, *TINY, "derivatives.yaml"), MUL_SCALAR,
         "- name: mul.int(Tensor self, int other) -> Tensor\n  self: grad * other\n\n" + MUL_SCALAR)
    out = scons(proj, *ARGS, "--autograd-explain=MulBackward2").stdout
    assert compiled(out) == ["MulBackward1.os", "MulBackward2.os"]
    assert linked(out, LIB) == sorted(ALL_OBJECTS + ["MulBackward2.os"])
    assert "explain: MulBackward2: regenerated: renamed from MulBackward1" in "\n".join(report(out))


def test_removed_entry_loses_its_files_and_leaves_the_link(proj):
    edit(path(proj, *TINY, "derivatives.yaml"), MUL_SCALAR, "")
    out = scons(proj, *ARGS).stdout
    assert compiled(out) == []
    assert linked(out, LIB) == ["MulBackward0.os", "ScaleBackward0.os", "module.os"]
    assert sorted(os.listdir(path(proj, GEN, "functions"))) == [
        f"{op}.{x}" for op in ("MulBackward0", "ScaleBackward0") for x in ("cpp", "h", "os")]
    assert "0 regenerated, 2 unchanged, 1 removed" in report(out)[0]
    assert compiled(scons(proj, *ARGS).stdout) == []


@pytest.mark.parametrize("damage", ["corrupt", "truncated"])
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
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = _die_after
"""


def test_killed_generation_then_build_equals_clean_build(proj, tmp_path):
    edit(path(proj, *TINY, "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    edit(path(proj, *TINY, "derivatives.yaml"), "  self: grad * other\n  other:", "  self: other * grad\n  other:")
    killed = scons(proj, *ARGS, prelude=KILL_AFTER_FIRST_WRITE, check=False)
    assert killed.returncode == -9
    out = scons(proj, *ARGS).stdout
    assert compiled(out) == ["MulBackward0.os", "ScaleBackward0.os"]
    clean = clone(tmp_path / "clean")
    for f in ("native_functions.yaml", "derivatives.yaml"):
        shutil.copy(path(proj, *TINY, f), path(clean, *TINY, f))
    scons(clean, *ARGS)
    assert tree(path(proj, GEN)) == tree(path(clean, GEN))
    assert compiled(scons(proj, *ARGS).stdout) == []


def snapshot(root):
    return {p: (os.stat(os.path.join(d, p)).st_mtime_ns, open(os.path.join(d, p), "rb").read())
            for d, _, names in os.walk(root) for p in names}


def test_yaml_error_is_one_located_line_and_touches_nothing(proj):
    d = path(proj, *TINY, "derivatives.yaml")
    good = open(d).read()
    edit(d, "  self: grad * alpha", "  self: [grad * alpha")
    before = snapshot(path(proj, "build"))
    proc = scons(proj, *ARGS, check=False)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert len(errors) == 1 and "derivatives.yaml:" in errors[0] and "malformed YAML" in errors[0]
    assert compiled(proc.stdout) == []
    assert snapshot(path(proj, "build")) == before
    open(d, "w").write(good)
    out = scons(proj, *ARGS).stdout
    assert compiled(out) == [] and "inputs unchanged" in report(out)[0]


def test_clean_removes_generated_sources_then_build_restores_them(proj):
    scons(proj, "-c", *ARGS)
    assert not os.path.exists(path(proj, GEN))
    assert not os.path.exists(path(proj, "build", "example", LIB))
    out = scons(proj, *ARGS).stdout
    assert compiled(out) == ALL_OBJECTS


def test_dry_run_reports_and_writes_nothing(proj):
    edit(path(proj, *TINY, "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    before = snapshot(path(proj, "build"))
    out = scons(proj, "-n", *ARGS).stdout
    assert "would be 1 regenerated" in report(out)[0]
    assert snapshot(path(proj, "build")) == before
    assert compiled(scons(proj, *ARGS).stdout) == ["ScaleBackward0.os"]


def test_bad_tool_argument_is_one_line_error(proj):
    edit(path(proj, *TINY, "SConscript"), 'namespace="myops::autograd"', 'namespace="myops autograd"')
    proc = scons(proj, *ARGS, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert proc.returncode == 2 and len(errors) == 1
    assert "AutogradFunctions('gen'): namespace 'myops autograd' is not a C++ namespace" in errors[0]
