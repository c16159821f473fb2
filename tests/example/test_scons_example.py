"""`scons` at the root with the real compiler builds the example extension in
specs/: its ops load into torch and differentiate correctly (gradcheck, the
same gradients as built-in ops, the generated Functions' names, saved
tensors released, no graph where none is due); a second `scons` rebuilds
nothing; a second checkout sharing the CacheDir compiles nothing; editing one
formula recompiles exactly one object and the reloaded library shows it.

One checkout is built once (the cold build is the slow part: every TU
includes libtorch's headers) and never edited: the tests that read it pass in
any order.  Each edit test makes its own checkout, which retrieves every
object of the cold build from the shared CacheDir (nothing compiled) before
it edits, so that what it asserts does not depend on which tests ran before.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from support.scons_helpers import clone, compiled, edit, linked, report, scons

from support import extension_checks as checks
from support.spec_facts import REPO, example_ops

from autograd_scons.codegen.emit.python_bindings import binding_units
from autograd_scons.codegen.engine.buckets import bucket_of, slot_of

pytestmark = pytest.mark.compile

LIB = os.path.join("build", "example", "myops_ext.so")
EXAMPLE = example_ops(os.path.join(REPO, "specs"))
BUCKETS = 2   # pinned (UNITY=2), so that the objects do not depend on the CPU count
FUNCTIONS, KERNELS, OBJECTS = EXAMPLE.functions, EXAMPLE.kernels, EXAMPLE.objects(BUCKETS)
N_F, N_K = len(FUNCTIONS), len(KERNELS)
N_PY = len(binding_units.sources(N_F))   # the Functions' Python binding TUs
PY = f"Python bindings in {N_PY} TU{'s' if N_PY != 1 else ''}"
# -O0: these tests are about what gets built, not how fast it runs.
# AGF_TEST_CXX=clang++: built with clang (tests/example/test_clang_example.py
# runs the edit and override tests so).
ARGS = ("-j2", "OPT=-O0", f"UNITY={BUCKETS}") + ((f"CXX={os.environ['AGF_TEST_CXX']}",)
                                                 if os.environ.get("AGF_TEST_CXX") else ())


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cachedir"))


@pytest.fixture(scope="module")
def cold(tmp_path_factory, cache):
    """(checkout, output of its cold `scons`)."""
    root = clone(tmp_path_factory.mktemp("example") / "checkout")
    out = scons(root, *ARGS, f"CACHEDIR={cache}").stdout
    if os.environ.get("AGF_TEST_CXX"):  # every object compiled by the compiler asked for
        objects = [line for line in out.splitlines() if re.search(r" -o \S+\.os -c ", line)]
        assert objects and all(line.split()[0] == os.environ["AGF_TEST_CXX"] for line in objects), objects[:2]
    return root, out


@pytest.fixture(scope="module")
def ops(cold):
    sys.path.insert(0, os.path.join(cold[0], "specs", "python"))
    try:
        import myops
    finally:
        sys.path.pop(0)
    if myops._loaded:  # another module of this session loaded its build of the same sources: one per process
        return myops.load(next(iter(myops._loaded)))
    return myops.load(os.path.join(cold[0], LIB))


def test_cold_build_compiles_every_function_and_kernel(cold):
    root, out = cold
    assert compiled(out) == OBJECTS
    line = report(out)[0]
    assert line.startswith(f"build/example/gen: {N_F} Functions + {N_K} op kernels: {N_F + N_K} regenerated, "
                           "0 unchanged")
    # other TUs: the bindings' and the digest's (codegen/emit/cache_key.py)
    assert line.endswith(f"; compiled as {BUCKETS} buckets, {PY} ({N_PY} rewritten); {BUCKETS + N_PY + 1} compiled "
                         f"({BUCKETS} buckets, {N_PY + 1} other TUs)")
    assert report(out)[1] == f"{len(OBJECTS)} objects compiled in all ({BUCKETS + N_PY + 1} generated, 1 other)"
    symbols = subprocess.run(["nm", "-DC", "--defined-only", os.path.join(root, LIB)],
                             capture_output=True, text=True).stdout
    for op in FUNCTIONS:
        assert f"myops::autograd::{op}::apply(" in symbols


@pytest.mark.parametrize("case", checks.CASE_NAMES)
def test_gradcheck(ops, case):
    checks.check_gradcheck(ops, case)


@pytest.mark.parametrize("case", checks.CASE_NAMES)
def test_gradients_equal_builtin_ops_and_grad_fn_is_the_generated_function(ops, case):
    checks.check_matches_builtin(ops, case)


@pytest.mark.parametrize("case", checks.CASE_NAMES)
def test_compiled_autograd_gives_the_eager_gradients(ops, case):
    checks.check_compiled_autograd_matches_eager(ops, case)


def test_inplace_variant_and_out_variant(ops):
    checks.check_inplace_and_out(ops)


def test_saved_dtype_and_sizes_are_the_forwards(ops):
    checks.check_saved_dtype_and_sizes(ops)


def test_saved_tensors_are_released_after_backward(ops):
    checks.check_saved_tensors_released(ops)


def test_no_graph_where_no_gradient_is_due(ops):
    checks.check_no_graph_without_requires_grad(ops)


def fresh_checkout(tmp_path, cache):
    """Another checkout of the unedited sources, built from the CacheDir the
    cold build filled: the state an edit test starts from."""
    root = clone(tmp_path / "checkout")
    out = scons(root, *ARGS, f"CACHEDIR={cache}").stdout
    assert compiled(out) == [], "the cold build's objects were not all in the CacheDir"
    return root


def test_second_build_regenerates_nothing_and_compiles_nothing(cold, cache):
    root, _ = cold
    out = scons(root, *ARGS, f"CACHEDIR={cache}").stdout
    assert compiled(out) == [] and linked(out, "myops_ext.so") is None
    assert f"`{LIB}' is up to date." in out
    assert report(out) == [f"build/example/gen: {N_F} Functions + {N_K} op kernels: 0 regenerated, "
                           f"{N_F + N_K} unchanged, 0 removed; inputs unchanged (specs not parsed); "
                           f"compiled as {BUCKETS} buckets, {PY}; 0 compiled (0 buckets, 0 other TUs)",
                           "0 objects compiled in all (0 generated, 0 other)"]


def test_second_checkout_sharing_the_cachedir_compiles_nothing(cold, cache, tmp_path):
    other = clone(tmp_path / "elsewhere" / "checkout2")  # another absolute path
    out = scons(other, *ARGS, f"CACHEDIR={cache}").stdout
    assert compiled(out) == []
    retrieved = sorted(os.path.basename(p) for p in re.findall(r"Retrieved `([^']+)' from cache", out))
    assert retrieved == sorted(OBJECTS + ["myops_ext.so"])
    with open(os.path.join(other, LIB), "rb") as a, open(os.path.join(cold[0], LIB), "rb") as b:
        assert a.read() == b.read()


def test_compile_commands_on_demand(cold, cache):
    root, _ = cold
    out = scons(root, *ARGS, f"CACHEDIR={cache}", "compile_commands").stdout
    assert compiled(out) == []
    with open(os.path.join(root, "compile_commands.json")) as f:
        entries = json.load(f)
    assert sorted(os.path.basename(e["output"]) for e in entries) == OBJECTS
    assert all(not os.path.isabs(e["file"]) for e in entries)


RELOADED = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import myops
ops = myops.load(sys.argv[2])
x = torch.randn(3, 4, dtype=torch.double, requires_grad=True)
ops.scale(x, 2.5).sum().backward()
print(ops.scale(x, 1.0).grad_fn.name(), x.grad.unique().tolist())
"""


def test_editing_one_formula_recompiles_its_edit_tu_only_and_changes_the_gradient(cold, cache, tmp_path):
    root = fresh_checkout(tmp_path, cache)
    edit(os.path.join(root, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    out = scons(root, *ARGS, f"CACHEDIR={cache}", "--autograd-explain=ScaleBackward0").stdout
    # First edit: its edit TU (and the digest's); its bucket keeps its old
    # text, overridden at link.
    edit_tu = f"edited_{slot_of('ScaleBackward0', 2)}.os"   # -j2: two edit TUs
    assert compiled(out) == sorted(["cache_key.os", edit_tu])
    # Its bucket is linked as a copy whose overridden symbols are weak.
    shadowing = f"bucket_{bucket_of('ScaleBackward0', BUCKETS)}"
    assert linked(out, "myops_ext.so") == sorted([o for o in OBJECTS if o != f"{shadowing}.os"]
                                                 + [f"{shadowing}.weak.os", edit_tu])
    lines = report(out)
    # The kernels of scale and scale_ are re-keyed (their Function's info
    # changed) but render the same bytes: not rewritten, not recompiled.
    assert lines[0] == (f"build/example/gen: {N_F} Functions + {N_K} op kernels: 1 regenerated, "
                        f"{N_F + N_K - 1} unchanged, "
                        "0 removed; derivatives entry changed: 3 (ScaleBackward0, myops::scale, "
                        "myops::scale_); 2 re-rendered identical, left untouched; compiled as 2 buckets + 1 "
                        f"unit in 1 edit TU (ScaleBackward0), 1 overriding its old text in a bucket, {PY} "
                        "(0 rewritten); 2 compiled (0 buckets, 2 other TUs)")
    assert lines[1].startswith("explain: ScaleBackward0: regenerated: derivatives entry changed")
    assert lines[1].endswith("overridden at link (that bucket was not recompiled); its Python bindings compile "
                             "in python/bindings_0.cpp (unchanged)")
    # A fresh process sees the new formula: d(2.5 x)/dx is now reported as 5.
    proc = subprocess.run([sys.executable, "-c", RELOADED, os.path.join(root, "specs", "python"),
                           os.path.join(root, LIB)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ScaleBackward0", "[5.0]"]


RELOADED_CUBE = """
import sys, torch
import torch.autograd.forward_ad as fwAD
sys.path.insert(0, sys.argv[1])
import myops
ops = myops.load(sys.argv[2])
x = torch.tensor([2.0], dtype=torch.double, requires_grad=True)
ops.cube(x).backward()
with fwAD.dual_level():
    d = fwAD.make_dual(torch.tensor([2.0], dtype=torch.double), torch.ones(1, dtype=torch.double))
    tangent = fwAD.unpack_dual(ops.cube(d)).tangent
print(x.grad.item(), tangent.item())
"""


def test_an_edited_op_kernel_overrides_its_old_copy_and_registers_once(cold, cache, tmp_path):
    # cube's forward formula derives from its backward one: the edit changes
    # its Function's .cpp and its op kernel's, neither header.  Both compile
    # in edit TUs; their buckets keep the old copies, overridden at link,
    # registration included (it would fail on load if it ran twice).
    root = fresh_checkout(tmp_path, cache)
    edit(os.path.join(root, "specs", "derivatives.yaml"), "self: 3 * grad * self.pow(2)",
         "self: 3 * grad * self.pow(2) * 2")
    out = scons(root, *ARGS, f"CACHEDIR={cache}").stdout
    assert compiled(out) == sorted({f"edited_{slot_of(u, 2)}.os"
                                    for u in ("CubeBackward0", "myops::cube")} | {"cache_key.os"})
    assert "2 overriding their old text" in report(out)[0]
    proc = subprocess.run([sys.executable, "-c", RELOADED_CUBE, os.path.join(root, "specs", "python"),
                           os.path.join(root, LIB)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["24.0", "24.0"]   # d(x^3)/dx at 2 is 12, now doubled


def test_a_duplicate_symbol_in_your_code_fails_the_link_while_an_override_is_active(cold, cache, tmp_path):
    # An edited formula overrides its old text (its bucket is not rewritten):
    # a duplicate definition in the extension's own sources must then fail
    # the link as in a clean build, not be resolved silently.
    root = fresh_checkout(tmp_path, cache)
    # An edit no other test makes: its edit TU's object goes into the shared
    # CacheDir, where another test's identical edit would find it compiled.
    edit(os.path.join(root, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 7")
    assert "1 overriding its old text" in report(scons(root, *ARGS, f"CACHEDIR={cache}").stdout)[0]
    csrc = os.path.join(root, "specs", "csrc")
    for name, value in (("dup_a", 1), ("dup_b", 2)):
        with open(os.path.join(csrc, name + ".cpp"), "w") as f:
            f.write(f"int myops_dup_helper() {{ return {value}; }}\n")
    proc = scons(root, *ARGS, f"CACHEDIR={cache}", check=False)
    assert re.search(r"overriding (its|their) old text", report(proc.stdout)[0])
    assert proc.returncode != 0
    assert re.search(r"multiple definition of .myops_dup_helper\(\)", proc.stdout + proc.stderr), proc.stderr[-2000:]
    for name in ("dup_a", "dup_b"):
        os.unlink(os.path.join(csrc, name + ".cpp"))
    scons(root, *ARGS, f"CACHEDIR={cache}")  # and without them it links again
