"""The project's own fuzz of the specs (issue 60), seeded and bounded:
mutants of the example's specs (specs/) and of tests/fixtures/tiny_ext, ten
classes of slips (tests/support/spec_fuzz.py).  A mutant fails the test on
a traceback, a hang (over its time limit), a signal, or a refusal that
names no file and line; in the full tier, a sample of the accepted
mutants is compiled, and an error outside a formula's own yaml line fails
it too (a formula's own line is the user's C++, which the compiler
reports there).  Each run prints its counts per class in the terminal
summary (CI's log, xdist's workers included): tests/conftest.py shows the
`summary` lines the tests record."""

from __future__ import annotations

import collections
import os
import subprocess
import sys

import pytest

from support import fuzz_runner, spec_fuzz
from support.spec_facts import REPO

SEED = 60
PER_CLASS = 8          # per class and base: 160 mutants, ~3 s
FULL_PER_CLASS = 15    # the full tier's: 300 mutants, the campaign's size
COMPILED = 3           # accepted mutants of tiny_ext compiled in the full tier
TIME_LIMIT = 5.0       # seconds a mutant may take to generate


def _summary(results, compiled=None) -> list[str]:
    by_class: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for m, o in results:
        by_class[m.cls][o.kind] += 1
    lines = []
    for cls in spec_fuzz.CLASSES + ("all",):
        c = sum(by_class.values(), collections.Counter()) if cls == "all" else by_class[cls]
        failures = sum(n for k, n in c.items() if k not in ("refused", "accepted"))
        done = f", {compiled.get(cls, 0)} compiled" if compiled is not None else ""
        lines.append(f"fuzz {cls}: {sum(c.values())} mutants, {c['refused']} refused at a line, "
                     f"{c['accepted']} accepted{done}, {failures} failures")
    return lines


def _failures(results) -> list[str]:
    return [f"{m.base} {m.cls} ({m.what}): {o.kind}: {o.detail}" for m, o in results
            if o.kind not in ("refused", "accepted")]


def test_every_mutant_is_refused_at_a_line_or_generated(tmp_path, record_property):
    results = list(fuzz_runner.run(spec_fuzz.mutants(SEED, PER_CLASS), str(tmp_path), TIME_LIMIT))
    for line in _summary(results):
        record_property("summary", line)
    assert len(results) == PER_CLASS * len(spec_fuzz.CLASSES) * len(spec_fuzz.BASES)
    assert not _failures(results), "\n".join(_failures(results))
    kinds = collections.Counter(o.kind for _, o in results)
    assert kinds["refused"] and kinds["accepted"]   # (a fuzz that only ever refuses tests nothing)


def test_the_mutants_are_the_same_for_a_seed():
    assert spec_fuzz.mutants(SEED, 2) == spec_fuzz.mutants(SEED, 2)
    assert spec_fuzz.mutants(SEED, 2) != spec_fuzz.mutants(SEED + 1, 2)


def test_the_runner_reports_a_traceback_a_hang_and_a_signal(tmp_path, monkeypatch):
    """The fuzz can fail: an exception that is no refusal, a mutant that
    never finishes, and one that kills its process are each its outcome."""
    todo = spec_fuzz.mutants(SEED, 1, bases=("tiny_ext",))[:4]
    plan = {0: "raise", 1: "hang", 2: "kill"}

    def broken(native, derivatives):
        seen = len(list(tmp_path.glob("seen*")))   # (each mutant runs in a worker: counted in files)
        (tmp_path / f"seen{seen}").touch()
        step = plan.get(seen)
        if step == "raise":
            raise KeyError("planted")
        if step == "hang":
            while True:
                pass
        if step == "kill":
            os.kill(os.getpid(), 11)
        return {}

    monkeypatch.setattr(fuzz_runner, "generate", broken)
    folder = tmp_path / "work"
    folder.mkdir()
    kinds = [o.kind for _, o in fuzz_runner.run(todo, str(folder), timeout=0.5)]
    assert kinds == ["traceback", "hang", "signal", "accepted"]


def _compile_errors(mutant, folder) -> list[str]:
    """The compiler's errors for the mutant's generated bucket, outside a
    formula's own yaml line."""
    from support import cxx
    native, derivatives = fuzz_runner.write(mutant, str(folder))
    out = folder / "gen"
    subprocess.run([sys.executable, "-m", "autograd_scons", "generate", "-q", "--native-functions", native,
                    "--derivatives", derivatives, "--out", str(out), "--unity", "1", "--no-python"],
                   cwd=REPO, check=True, capture_output=True, text=True)
    proc = subprocess.run([cxx.CXX, *cxx.torch_flags(), *cxx.python_flags(), "-w", "-fsyntax-only",
                           "unity/bucket_0.cpp"], cwd=out, capture_output=True, text=True)
    errors = [line for line in proc.stderr.splitlines() if ": error:" in line]
    assert proc.returncode == 0 or errors, proc.stderr[-2000:]
    return [e for e in errors if not e.startswith(f"{spec_fuzz.DERIVATIVES}:")]


@pytest.mark.compile   # (a bucket against torch's headers: ~20 s each)
def test_a_sample_of_the_accepted_mutants_compiles(tmp_path, record_property):
    results = list(fuzz_runner.run(spec_fuzz.mutants(SEED, FULL_PER_CLASS), str(tmp_path), TIME_LIMIT))
    assert not _failures(results), "\n".join(_failures(results))
    accepted = [m for m, o in results if o.kind == "accepted" and m.base == "tiny_ext"]
    # the first of each class that changes what the generated C++ is made of
    sample = [next(m for m in accepted if m.cls == c) for c in ("types", "returns", "formulas", "names", "aliases")
              if any(m.cls == c for m in accepted)][:COMPILED]
    compiled, bad = collections.Counter(), []
    for k, m in enumerate(sample):
        folder = tmp_path / f"compile{k}"
        folder.mkdir()
        errors = _compile_errors(m, folder)
        compiled[m.cls] += 1
        compiled["all"] += 1
        if errors:
            bad.append(f"{m.cls} ({m.what}): {errors[0]}")
    for line in _summary(results, compiled):
        record_property("summary", line)
    assert not bad, "\n".join(bad)
