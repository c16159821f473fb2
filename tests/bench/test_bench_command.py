"""`python -m autograd_scons bench` (bench/command.py) on the example (a
clone of this checkout, SConstruct), on a project of `new`, and on a
script calling load(): the scenarios' counts from their build reports,
the JSON and Markdown written (and appended to $GITHUB_STEP_SUMMARY), a
progress line per build, and the project left as it was.  Stand-in
compiler (tests/support/fakecxx.sh), one repetition."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from support import ship_helpers as ship
from support.load_helpers import SPECS
from support.scons_helpers import FAKE_CXX, clone, snapshot

from autograd_scons.build_report import document

# The example at UNITY=2 PCH=0: two buckets, the bindings, the digest, kernels.cpp.
EXAMPLE_ARGS = ("UNITY=2", "PCH=0", f"CXX={FAKE_CXX}")
LOAD_SCRIPT = """\
import os
from autograd_scons import load
here = os.path.dirname(os.path.abspath(__file__))
spec = lambda *p: os.path.join(here, "specs", *p)
ops = load("benchops", native_functions=spec("native_functions.yaml"), derivatives=spec("derivatives.yaml"),
           sources=[spec("csrc", "kernels.cpp")], extra_include_paths=[spec("include")],
           includes=["myops/backward_helpers.h"], namespace="myops::autograd")
"""


def bench(project, out, *args, env=None):
    """The command in a child, as CI runs it: (its results, its process)."""
    cmd = [sys.executable, "-m", "autograd_scons", "bench", str(project), "-n", "1", "-o", str(out), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ship.environ(ship.this_checkout(None), **(env or {})))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(os.path.join(out, "bench.json")) as f:
        return json.load(f), proc


def rows(res):
    return {row["name"]: row for row in res["scenarios"]}


def compiled_kinds(out, scenario):
    doc = document.read(os.path.join(out, "reports", f"{scenario}.json"))
    return sorted(o["kind"] for o in doc["objects"] if o["fate"] == "compiled")


def unit_states(out, scenario):
    doc = document.read(os.path.join(out, "reports", f"{scenario}.json"))
    return {u["name"]: (u["state"], u["reason"]) for u in doc["folders"][0]["units"]}


@pytest.mark.compile
def test_bench_of_the_example_counts_each_scenario_and_changes_nothing(tmp_path):
    project = clone(tmp_path / "project", torch_facts=False)
    before = snapshot(project)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    res, proc = bench(project, tmp_path / "out", *EXAMPLE_ARGS, "--scenarios", "cold,noop,formula,header,remove,add,second",
                      env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert snapshot(project) == before   # worked in copies
    by = rows(res)
    assert list(by) == ["cold", "noop", "formula", "header", "remove", "add", "second"]
    assert [by[n]["compiled"]["median"] for n in ("cold", "noop", "formula", "second")] == [5, 0, 2, 0]
    # the formula edit: its Function's edit TU and the digest of the generated code
    assert by["formula"]["edited"] == "bmul: self" and compiled_kinds(tmp_path / "out", "formula") == ["digest", "edit"]
    # the header every definition TU includes: the buckets (the edit TU, now
    # too), the hand-written kernels, whose helpers it holds, and the digest,
    # which covers every header of the library
    assert by["header"]["edited"] == os.path.join("specs", "include", "myops", "backward_helpers.h")
    assert compiled_kinds(tmp_path / "out", "header") == ["bucket", "bucket", "digest", "edit", "user"]
    # the entry removed (its Function goes), then put back (new again: its old objects come from the cache)
    assert by["remove"]["edited"] == by["add"]["edited"] == "bmul"
    assert unit_states(tmp_path / "out", "remove")["BmulBackward0"] == ("removed", "removed")
    assert unit_states(tmp_path / "out", "add")["BmulBackward0"] == ("regenerated", "new")
    assert by["add"]["retrieved"]["median"] > 0
    assert by["noop"]["hit_rate"] is None and by["second"]["hit_rate"]["median"] == 1.0
    assert by["second"]["retrieved"]["median"] == 5
    # the table: printed, written, appended to the job's summary
    with open(tmp_path / "out" / "bench.md") as f:
        table = f.read()
    assert table in proc.stdout and summary.read_text() == "earlier step\n" + table + "\n"
    assert re.search(r"^\| second checkout, same cache \| [\d.]+ \| [\d.]+ \| 0 \| 5 \| 1\.00 \|$", table, re.M)
    progress = [line for line in proc.stderr.splitlines() if line.startswith("bench: [1/1] ")]
    assert len(progress) == 7 and "second checkout, same cache" in progress[-1]
    assert sorted(os.listdir(tmp_path / "out" / "reports")) == [f"{n}.json" for n in sorted(by)]


def test_bench_of_a_project_that_does_not_build_is_one_line(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "SConstruct").write_text("Exit(3)\n")
    cmd = [sys.executable, "-m", "autograd_scons", "bench", str(tmp_path / "p"), "-n", "1", "-o", str(tmp_path / "o")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ship.environ(ship.this_checkout(None)))
    assert proc.returncode == 1
    first, kept = proc.stderr.strip().splitlines()
    assert first.startswith("error: bench: cold build (repetition 1) failed (exit 3): ")
    work = kept.split("kept: ")[1]
    shutil.rmtree(work)
    assert not os.path.exists(tmp_path / "o")
    proc = subprocess.run(cmd[:4] + [str(tmp_path)], capture_output=True, text=True,
                          env=ship.environ(ship.this_checkout(None)))
    assert proc.returncode == 2 and proc.stderr == f"error: bench: {tmp_path}: no SConstruct there (give a folder " \
        "with one, or a Python file that calls load())\n"


@pytest.mark.compile
def test_bench_of_a_new_project(tmp_path):
    path = ship.this_checkout(tmp_path)
    ship.new(tmp_path, "bench_ops", path)
    res, _ = bench(tmp_path / "bench_ops", tmp_path / "out", f"CXX={FAKE_CXX}", "--scenarios",
                   "cold,noop,formula,header,remove,second")
    by = rows(res)
    assert by["noop"]["compiled"]["median"] == 0 and by["second"]["hit_rate"]["median"] == 1.0
    # auto_element_wise: the op kernel's forward formula comes from the edited one, so both edit TUs compile
    assert by["formula"]["edited"] == "scaled_square: self"
    assert compiled_kinds(tmp_path / "out", "formula") == ["digest", "edit", "edit"]
    assert by["header"]["skipped"] == "no header in the project (name one with --header FILE)"
    assert by["remove"]["skipped"] == "derivatives.yaml has one entry (the generator refuses a file without any)"


@pytest.mark.compile
def test_bench_of_a_load_script(tmp_path):
    shutil.copytree(SPECS, tmp_path / "project" / "specs", ignore=shutil.ignore_patterns("python", "__pycache__"))
    (tmp_path / "project" / "build_ops.py").write_text(LOAD_SCRIPT)
    res, _ = bench(tmp_path / "project" / "build_ops.py", tmp_path / "out", env={"CXX": FAKE_CXX})
    by = rows(res)
    assert [by[n]["compiled"]["median"] for n in ("cold", "noop", "formula")] == [4, 0, 2]
    assert compiled_kinds(tmp_path / "out", "formula") == ["digest", "edit"]
    with open(tmp_path / "out" / "reports" / "noop.json") as f:
        assert json.load(f)["status"] == "up_to_date"   # no SCons: load()'s stamp
    assert by["second"]["hit_rate"]["median"] == 1.0 and by["second"]["retrieved"]["median"] == 4
