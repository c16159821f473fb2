"""The order of the test groups (support/schedule.py): costliest first, from
the measured seconds or, for a new group, its tests' marks; and the run
that writes the measured seconds."""

import json
import os
import subprocess
import sys

from support import schedule
from support.spec_facts import REPO


def test_the_costliest_group_goes_first_measured_or_estimated():
    hints = {"test_long": {"all": 600.0, "fast": 2.0}, "test_mid": {"all": 90.0, "fast": 90.0}}
    groups = {"test_short": ["other"] * 40, "test_long": ["other", "compile"], "test_mid": ["slow"],
              "test_new": ["compile", "compile", "compile"]}
    # test_new is not measured: three full-tier tests, 90 s by the marks, as test_mid (by name then)
    assert schedule.order(groups, hints) == ["test_long", "test_mid", "test_new", "test_short"]
    # the fast tier: test_long's compiling test deselected, its fast share is what counts
    fast = {"test_short": ["other"] * 40, "test_long": ["other"], "test_mid": ["slow"]}
    assert schedule.order(fast, hints) == ["test_mid", "test_short", "test_long"]
    assert schedule.order(groups, {}) == ["test_new", "test_long", "test_mid", "test_short"]


def test_a_module_of_the_torchgen_reference_is_in_its_group():
    assert schedule.group_of("tests/codegen/test_foreach_infos.py::test_x[a::b]@torchgen_reference") == \
        "torchgen_reference"
    assert schedule.group_of("tests/cuda/test_cuda_tier.py::test_y@test_cuda_tier") == "test_cuda_tier"


def test_the_recorder_sums_each_group_and_keeps_the_groups_it_did_not_run(tmp_path):
    path = str(tmp_path / "group_seconds.json")
    with open(path, "w") as f:
        json.dump({"test_kept": {"all": 5.0, "fast": 5.0}, "test_a": {"all": 1.0, "fast": 1.0}}, f)
    r = schedule.Recorder()
    for when, d in (("setup", 10.0), ("call", 2.5), ("teardown", 0.5)):   # a compiling test
        r.add("tests/x/test_a.py::test_build@test_a", {"compile": 1, "test_build": 1}, d)
    r.add("tests/x/test_a.py::test_parse@test_a", {"test_parse": 1}, 0.3)
    r.write(path)
    assert json.load(open(path)) == {"test_a": {"all": 13.3, "fast": 0.3}, "test_kept": {"all": 5.0, "fast": 5.0}}
    assert os.listdir(tmp_path) == ["group_seconds.json"]


def test_the_measured_groups_exist():
    """A renamed module leaves its seconds under the old name: rename them too."""
    tests = os.path.join(REPO, "tests")
    modules = {os.path.splitext(n)[0] for _, _, files in os.walk(tests) for n in files
               if n.startswith("test_") and n.endswith(".py")}
    stale = sorted(set(schedule.load()) - {schedule.group_of(m + ".py") for m in modules})
    assert stale == [] and schedule.load(), stale


def test_a_run_hands_out_the_groups_costliest_first():
    """pytest's own collection under the hints: the order the workers get."""
    hints = schedule.load()
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-n", "0", "tests/support", "tests/lint", "tests/docs"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    seen = []
    for line in out.splitlines():
        if "::" in line and schedule.group_of(line) not in seen:
            seen.append(schedule.group_of(line))
    # (a group without a compiling test: its two figures are the same)
    costs = [(hints[g]["all"], g) for g in seen if g in hints]
    assert len(costs) > 3 and [c for c, _ in costs] == sorted((c for c, _ in costs), reverse=True), costs
