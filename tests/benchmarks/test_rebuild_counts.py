"""The rebuild benchmark's count check (benchmarks/rebuild_counts.py), on real
`scons` output of the tiny extension: a sound edit passes; a cache key broken
on purpose (salted in every run, as a key over something unstable would be)
is flagged as a miss where a hit was due, naming the Function.

The benchmark itself is not run here: CI runs its --quick mode.
"""

import importlib.util
import os
import shutil

import pytest

from support import scenarios
from support.scons_helpers import TINY_ARGS, compiled, scons
from support.spec_facts import REPO, example_ops

_spec = importlib.util.spec_from_file_location(
    "rebuild_counts", os.path.join(REPO, "benchmarks", "rebuild_counts.py"))
counts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(counts)

ARGS = TINY_ARGS
SALTED = "MulBackward0"
BREAK_KEY = f"""
import dataclasses, os, sys
# The checkout's own package, first on sys.path as SCons puts it (not one
# installed from elsewhere, whose generator version would differ).
sys.path.insert(0, os.path.join(os.getcwd(), "site_scons"))
from autograd_scons.codegen.engine import incremental
_unit_key = incremental.unit_key
def unit_key(unit, options, generator):
    k = _unit_key(unit, options, generator)
    return dataclasses.replace(k, key=k.key + os.urandom(8).hex()) if k.name == {SALTED!r} else k
incremental.unit_key = unit_key
"""


@pytest.mark.parametrize("broken", [pytest.param(False, marks=pytest.mark.compile), True], ids=["sound", "broken key"])
def test_a_miss_where_a_hit_is_due_is_flagged(tiny_checkout, tmp_path, broken):
    root = shutil.copytree(tiny_checkout[0], tmp_path / "repo", symlinks=True)
    scenarios.BY_NAME["formula"].apply(os.path.join(root, "tests", "fixtures", "tiny_ext"))
    out = scons(root, *ARGS, prelude=BREAK_KEY if broken else "").stdout
    rep = counts.parse_report(out)
    sc = scenarios.BY_NAME["formula"]
    found = counts.problems((len(sc.regenerated), 0, len(sc.objects)), rep, len(compiled(out)))
    if not broken:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith("1 cache miss(es) where a hit was due")
        assert SALTED in rep["line"]  # the report names the Function that missed


def test_report_parsing_reads_op_kernels_and_counts():
    ex = example_ops(os.path.join(REPO, "specs"))
    n_f, n_k = len(ex.functions), len(ex.kernels)
    line = (f"autograd_functions: build/example/gen: {n_f} Functions + {n_k} op kernels: 1 regenerated, "
            f"{n_f + n_k - 1} unchanged, 0 removed; derivatives entry changed: 3 (ScaleBackward0, myops::scale, "
            "myops::scale_); "
            "2 re-rendered identical, left untouched; compiled as 2 buckets + 1 unit in 1 edit TU "
            "(ScaleBackward0), 1 overriding its old text in a bucket; 1 compiled (0 buckets, 1 other TU)")
    rep = counts.parse_report("scons: x\n" + line + "\n")
    assert (rep["functions"], rep["regenerated"], rep["removed"], rep["identical"], rep["recompiled"]) == \
        (n_f + n_k, 1, 0, 2, 1)
    assert counts.problems((1, 0, 1), rep, 1) == [
        "2 cache miss(es) where a hit was due: Function(s) re-rendered to unchanged text, "
        "their key changed though their inputs did not"]
    assert any("2 objects recompiled, expected 1" in p for p in counts.problems((1, 0, 1), rep, 2))
