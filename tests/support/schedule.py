"""The order in which pytest-xdist hands the test groups to its workers
(`--dist loadgroup --no-loadscope-reorder`, setup.cfg): the costliest group
first, so that the run does not end with one worker on a long group while
the other has nothing left (longest-processing-time-first).

A group is a module's tests, or the modules that share one costly
reference (TORCHGEN_REFERENCE).  Its cost is the seconds measured for it in
tests/group_seconds.json, two figures per group: all its tests, and its
tests outside the full tier (the fast tier's share).  A group the file does
not know yet is estimated from its tests' marks.  The file is only a hint
for the order: a stale one makes a run slower, never wrong.  A run with
AGF_STORE_GROUP_SECONDS=1 writes the groups it ran back into it.
"""

from __future__ import annotations

import json
import os

HINTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "group_seconds.json")

# Modules that compare with torchgen's own run on torch's specs
# (support/torchgen_reference.real_torchgen, a few seconds of CPU per
# process): one worker runs them all, so that the run is made once.
TORCHGEN_REFERENCE = frozenset({"test_infos_match_torchgen", "test_foreach_infos", "test_emit_classes",
                                "test_python_bindings_specs"})

# A group not measured yet: seconds per test of each kind, rough medians of
# the measured groups (a full-tier test compiles or installs; a `slow` one
# runs large subprocesses).
GUESS_S = {"compile": 30.0, "slow": 10.0, "other": 0.1}


def group_of(nodeid: str) -> str:
    """The group of the test `nodeid` (xdist's `@group` suffix, if any, is
    not part of the path)."""
    module = os.path.basename(nodeid.split("::", 1)[0])
    module = module[:-3] if module.endswith(".py") else module
    return "torchgen_reference" if module in TORCHGEN_REFERENCE else module


def kind(marks) -> str:
    """"compile", "slow" or "other", from a test's mark names."""
    return "compile" if "compile" in marks else "slow" if "slow" in marks else "other"


def load(path: str = HINTS) -> dict[str, dict[str, float]]:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def cost(group: str, kinds: list[str], hints: dict) -> float:
    """Seconds that `group`'s selected tests (their kinds) are expected to take."""
    known = hints.get(group)
    if known is not None:
        return known["all"] if "compile" in kinds else known["fast"]
    return sum(GUESS_S[k] for k in kinds)


def order(groups: dict[str, list[str]], hints: dict) -> list[str]:
    """The group names, costliest first (by name among equals: the same
    order every run)."""
    return sorted(groups, key=lambda g: (-cost(g, groups[g], hints), g))


class Recorder:
    """Sums each group's test durations (setup, call and teardown) as the
    reports arrive, and writes them into the hints."""

    def __init__(self) -> None:
        self.seconds: dict[str, dict[str, float]] = {}

    def add(self, nodeid: str, marks, duration: float) -> None:
        s = self.seconds.setdefault(group_of(nodeid), {"all": 0.0, "fast": 0.0})
        s["all"] += duration
        if kind(marks) != "compile":
            s["fast"] += duration

    def write(self, path: str = HINTS) -> None:
        hints = load(path)
        hints.update({g: {k: round(v, 1) for k, v in s.items()} for g, s in self.seconds.items()})
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(dict(sorted(hints.items())), f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
