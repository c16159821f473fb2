"""load() never loads a library its own sources did not produce (issue 34),
over random sequences of what happens to build folders: edits, undos,
builds killed during a compile or a link (SIGKILL or SIGINT, the step's
output half-written or complete), two loads at once (one folder or two),
libraries swapped for another folder's bytes (the published one, the link
in obj/, or both; the old mtime put back), and a load with another job
count (the stamp's key changes: SCons runs with nothing to rebuild).

Two fingerprinted extensions (m1, m2: support/fingerprints.py), two build
folders each.  The test keeps its own model of what each folder's source
says (a stack of values: an edit pushes a new one, an undo pops it, a
killed build's edit is kept or undone at random).  After every step, a
fresh process load()s the current source in each folder the step touched:
it must load a library whose fingerprints (read in the loaded library's
memory) are exactly that source's, or fail with one `ERROR ...` line;
never a wrong library.  The processes of the step itself are held to the
same rule.

Seeded: $AGF_RANDOM_SEED runs that seed alone; otherwise the fixed DEFAULT
seed and one fresh seed.  Every assertion names its seed and the steps so
far.  Bounded: no new step is taken after BUDGET_S seconds of a seed's run
(at least 10 steps must fit)."""

import os
import random
import signal
import time

import pytest

from support import interruptions as ip
from support.fingerprints import THEN_FAKE, environ, fp_call, loaded_value, run, start

# A hunt, not a check of one rule: the full tier (tests/conftest.py), where
# .ci/run gives it 40 steps a seed; each rule it hunts for has its own
# fast-tier test in test_load_trust.py.
pytestmark = [pytest.mark.slow, pytest.mark.compile]

DEFAULT = 34
# Per seed: at most STEPS steps, none begun after BUDGET_S s.  .ci/run hunts
# longer (AGF_RANDOM_STEPS=40), and so can anyone: AGF_RANDOM_STEPS=300
# AGF_RANDOM_BUDGET_S=600.
STEPS = int(os.environ.get("AGF_RANDOM_STEPS") or 12)
BUDGET_S = float(os.environ.get("AGF_RANDOM_BUDGET_S") or 20)

_GIVEN = os.environ.get("AGF_RANDOM_SEED", "").strip()
# Named, not numbered, so that pytest-xdist's workers collect the same tests:
# the fresh seed is drawn when its test runs.
SEEDS = ["given"] if _GIVEN else ["default", "fresh"]
# (step kind, weight)
KINDS = [("edit", 2), ("undo", 2), ("kill", 3), ("concurrent", 1.5), ("swap", 1.5), ("jobs", 1)]


class Folder:
    """A build folder of one extension, and what its source says (a stack)."""

    def __init__(self, name, path, value):
        self.name, self.path, self.values = name, path, [value]

    @property
    def value(self):
        return self.values[-1]

    def __repr__(self):
        return f"{self.name}@{os.path.basename(self.path)}"


class Run:
    def __init__(self, seed, root):
        self.seed, self.root = seed, root
        self.rng = random.Random(seed)
        self.env = environ(cxx=ip.stalling_cxx(root))
        self.log: list = []
        self.errors: list = []
        self.next_value = 1

    def new_value(self):
        self.next_value += 1
        return self.next_value

    def where(self):
        return (f"seed {self.seed} (rerun: AGF_RANDOM_SEED={self.seed} python -m pytest -q -n 0 "
                f"tests/jit/test_load_random.py), steps so far:\n  " + "\n  ".join(self.log[-12:]))

    def outcome(self, folder, value, stdout, stderr, returncode, what):
        """A load()'s process loaded `value`'s library, or failed with one
        ERROR line (kept in self.errors); anything else fails the test."""
        if returncode == 0:
            got = loaded_value(stdout)
            assert got == str(value), (
                f"WRONG LIBRARY: {what} of {folder} (source v{value}) loaded a library holding "
                f"{got!r}\n{self.where()}\nstderr: {stderr[-2000:]}")
            return True
        errors = [line for line in stdout.splitlines() if line.startswith("ERROR ")]
        assert len(errors) == 1 and "Traceback" not in stderr, (
            f"{what} of {folder} (source v{value}) exited {returncode} without one ERROR line\n"
            f"{self.where()}\nstdout: {stdout[-2000:]}\nstderr: {stderr[-2000:]}")
        self.errors.append(f"{what} of {folder}: {errors[0]}")
        return False

    def load(self, folder, value=None, what="load", env=None):
        value = folder.value if value is None else value
        proc = run(fp_call(folder.name, folder.path, value), env or self.env, then=THEN_FAKE, check=False)
        return self.outcome(folder, value, proc.stdout, proc.stderr, proc.returncode, what)

    def start(self, folder, value):
        return start(fp_call(folder.name, folder.path, value), self.env, then=THEN_FAKE)

    def finish(self, proc, folder, value, what):
        out, err = proc.communicate(timeout=300)
        return self.outcome(folder, value, out, err, proc.returncode, what)

    # --- the steps: each returns the folders it touched ---------------------

    def edit(self, folders):
        folder = self.rng.choice(folders)
        folder.values.append(self.new_value())
        self.log.append(f"edit {folder} -> v{folder.value}")
        self.load(folder, what="the edit's load")
        return [folder]

    def undo(self, folders):
        undoable = [f for f in folders if len(f.values) > 1]
        if not undoable:
            return self.edit(folders)
        folder = self.rng.choice(undoable)
        folder.values.pop()
        self.log.append(f"undo {folder} -> v{folder.value}")
        self.load(folder, what="the undo's load")
        return [folder]

    def kill(self, folders):
        folder = self.rng.choice(folders)
        step = self.rng.choice(["compile", "link"])
        written = self.rng.random() < 0.5
        sig = self.rng.choice([signal.SIGKILL, signal.SIGINT])
        value = self.new_value()
        keep = self.rng.random() < 0.5   # the killed edit kept (tried again), or undone
        self.log.append(f"kill {folder} building v{value}: {sig.name} at the {step} "
                        f"({'complete' if written else 'half-written'} output), then "
                        + ("the edit kept" if keep else f"the edit undone (v{folder.value})"))
        marker = os.path.join(self.root, f"stalled-{len(self.log)}")
        ip.stall_at(folder.path, step, marker, written=written)
        builder = self.start(folder, value)
        try:
            ip.wait_for(marker, builder)
            os.kill(builder.pid, sig)
            out, err = builder.communicate(timeout=120)
        finally:
            ip.unstall(folder.path)
            if builder.poll() is None:
                builder.kill()
                builder.communicate()
        if builder.returncode == 0:   # (the signal came too late to stop it: held to the rule)
            self.outcome(folder, value, out, err, 0, "the killed load")
        if keep:
            folder.values.append(value)
        return [folder]

    def concurrent(self, folders):
        if self.rng.random() < 0.5:   # one folder, two sources at once: each loads its own
            folder = self.rng.choice(folders)
            value = self.new_value()
            pair = [(folder, folder.value), (folder, value)]
            self.rng.shuffle(pair)
            folder.values.append(value)
        else:                          # two folders, each edited
            pair = [(f, self.new_value()) for f in self.rng.sample(folders, 2)]
            for f, value in pair:
                f.values.append(value)
        self.log.append("at once: " + ", ".join(f"{f} v{value}" for f, value in pair))
        procs = [self.start(f, value) for f, value in pair]
        for proc, (f, value) in zip(procs, pair):
            self.finish(proc, f, value, "a concurrent load")
        return sorted({f for f, _ in pair}, key=repr)

    def swap(self, folders):
        """Another folder's library bytes over this one's published library,
        its link (obj/), or both, written in place with the old mtime put back."""
        folder = self.rng.choice(folders)
        others = [f for f in folders if f is not folder
                  and os.path.isfile(os.path.join(f.path, f"{f.name}.so"))]
        if not others:
            return self.edit(folders)
        other = self.rng.choice(others)
        which = self.rng.choice(["the library", "the library and obj/", "obj/ alone"])
        self.log.append(f"swap in {folder}: {which} <- {other}'s library (v{other.value})")
        with open(os.path.join(other.path, f"{other.name}.so"), "rb") as f:
            theirs = f.read()
        published = os.path.join(folder.path, f"{folder.name}.so")
        linked = os.path.join(folder.path, "obj", f"{folder.name}.so")
        targets = {"the library": [published], "the library and obj/": [published, linked],
                   "obj/ alone": [linked]}[which]
        for target in targets:
            if not os.path.isfile(target):
                continue
            st = os.stat(target)
            with open(target, "r+b") as f:   # the same inode, then the old mtime back
                f.truncate(0)
                f.write(theirs)
            os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        return [folder]

    def jobs(self, folders):
        """The current source loaded with another job count: the stamp's key
        changes, so SCons runs, with nothing to rebuild."""
        folder = self.rng.choice(folders)
        jobs = self.rng.choice(["1", "3"])
        self.log.append(f"load {folder} v{folder.value} with MAX_JOBS={jobs}")
        self.load(folder, what=f"the MAX_JOBS={jobs} load", env=dict(self.env, MAX_JOBS=jobs))
        return [folder]


@pytest.fixture
def no_leftovers(tmp_path):
    """Nothing a killed build left running outlives the test."""
    yield
    ip.end_leftovers(tmp_path)


@pytest.mark.parametrize("which", SEEDS)
def test_random_steps_never_load_a_wrong_library(tmp_path, which, no_leftovers):
    seed = {"given": lambda: int(_GIVEN), "default": lambda: DEFAULT,
            "fresh": lambda: random.SystemRandom().randrange(1, 10**6)}[which]()
    print(f"seed {seed} (rerun: AGF_RANDOM_SEED={seed})")
    r = Run(seed, str(tmp_path))
    folders = [Folder(name, str(tmp_path / f"{name}-{k}"), r.new_value()) for name in ("m1", "m2") for k in "ab"]
    for folder in folders:
        r.log.append(f"first load {folder} v{folder.value}")
        assert r.load(folder, what="the first load"), r.where()
    kinds, weights = zip(*KINDS)
    deadline = time.monotonic() + BUDGET_S
    taken = 0
    while taken < STEPS and time.monotonic() < deadline:
        kind = r.rng.choices(kinds, weights)[0]
        try:
            touched = getattr(r, kind)(folders)
            taken += 1
            for folder in touched:   # a fresh process, the current source
                r.load(folder, what=f"the load after step {taken} ({kind})")
        except AssertionError as e:   # (a helper's own assertion: named with the seed too)
            if f"seed {seed}" in str(e):
                raise
            raise AssertionError(f"{e}\n{r.where()}") from None
    print(f"seed {seed}: {taken} steps; {len(r.errors)} loads failed with one line: {r.errors}")
    assert taken >= min(10, STEPS), f"only {taken} steps in {BUDGET_S} s\n{r.where()}"
