"""A build interrupted after the edited object was compiled (or the edited
library linked), before SCons recorded it, then the edit undone: the next
build must give the library of the undone source, never the abandoned
edit's object or library (issue 34), for the builds that do not go through
load() (tests/jit/test_load_trust.py and test_load_random.py cover
load()): `scons` at the root of a checkout, and the editable install's
rebuild on import.

The stand-in compiler (support/fakecxx.sh) carries `AGF_FINGERPRINT(vN)`
comments from a source into its object and from the objects into the
library, so a library file says which source it was linked from.  A step is
made to stall (support/interruptions.py) with its output half-written (what
the stand-in does) or complete (`written`: the command had not returned
yet), and the build is killed there:

- its whole process group, as a terminal's Ctrl-C does (SIGINT: SCons
  catches it and saves its database) or `kill -9 -<group>` (SIGKILL: the
  database is never saved);
- for the editable rebuild, also the importing interpreter alone (SIGKILL),
  as when a notebook's kernel or an IDE's run is killed: its SCons goes on,
  orphaned, and finishes after the next import has rebuilt.

Every case ends with the same question: after the undo (and a redo, and
the undo again), does the library file hold exactly the source's
fingerprint?"""

import os
import signal
import subprocess
import sys

import pytest

from support import interruptions as ip
from support import ship_helpers as ship
from support.scons_helpers import TINY_ARGS, clone, scons

TINY = os.path.join("tests", "fixtures", "tiny_ext")
pytestmark = pytest.mark.slow  # ~20 s: a clone or a pip install -e per test, SCons subprocesses; no compiler

SCONS_MAIN = "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())"
SIGNALS = ["SIGKILL", "SIGINT"]
# (step stalled, its output at the kill)
STALLS = [("link", "half-written"), ("link", "written"), ("compile", "written")]

# The fast tier runs these; the full tier the whole matrix (tests/conftest.py).
# An editable case costs a venv and an install more: the editable tests run
# in the full tier only (marked `compile` on each test; EDITABLE_SAMPLE is
# what the fast tier would run of them: the orphaned linker, issue 35's late
# writer).
SAMPLE = {("link", "half-written", "SIGKILL"), ("link", "written", "orphan")}
EDITABLE_SAMPLE = {("link", "written", "orphan")}


def _sampled(cases, sample=SAMPLE):
    return [pytest.param(*case, marks=() if case in sample else pytest.mark.compile) for case in cases]


def _fingerprint(path, value):
    """`path` (a C++ source) with one fingerprint comment, `value`'s."""
    with open(path) as f:
        lines = [line for line in f.read().splitlines(keepends=True) if "AGF_FINGERPRINT" not in line]
    with open(path, "w") as f:
        f.write(f"// AGF_FINGERPRINT(v{value})\n" + "".join(lines))


def _found(root, suffix):
    """Files under `root` whose names end with `suffix`."""
    return sorted(os.path.join(parent, n) for parent, _, names in os.walk(root) for n in names
                  if n.endswith(suffix))


def _interrupt(proc, how, marker):
    """Wait until the stalled step made `marker`, then kill `proc` (started
    in a session of its own) as `how` says; (stdout, stderr) once it ended."""
    try:
        ip.wait_for(marker, proc)
        if how == "orphan":
            os.kill(proc.pid, signal.SIGKILL)        # the process alone: its children go on
        else:
            os.killpg(proc.pid, getattr(signal, how))   # the process group, the stalled step in it
        return proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


@pytest.fixture
def no_leftovers(tmp_path):
    """Nothing a killed build left running outlives the test."""
    yield
    ip.end_leftovers(tmp_path)


# --- `scons` at the root of a checkout ----------------------------------------

@pytest.mark.parametrize("step,output,sig", _sampled([(step, output, sig) for step, output in STALLS
                                                     for sig in SIGNALS]))
def test_scons_interrupted_then_undone_links_the_undone_source(tmp_path, step, output, sig, no_leftovers):
    root = clone(tmp_path / "repo")
    cxx = ip.stalling_cxx(tmp_path)
    args = [f"CXX={cxx}" if a.startswith("CXX=") else a for a in TINY_ARGS]
    module = os.path.join(root, TINY, "csrc", "module.cpp")
    _fingerprint(module, 1)
    scons(root, *args)
    [library] = _found(os.path.join(root, "build"), ".so")
    assert ip.fingerprints(library) == ["1"]

    _fingerprint(module, 2)
    marker = ip.stall_at(root, step, str(tmp_path / f"stalled-{step}"), written=output == "written")
    proc = subprocess.Popen([sys.executable, "-c", SCONS_MAIN, *args], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={k: v for k, v in os.environ.items() if not k.startswith("AUTOGRAD_")})
    ip.wait_for(marker, proc)
    # What the kill abandons: the edited object compiled, or the edited library linked.
    [edited] = [o for o in _found(os.path.join(root, "build"), ".os") if ip.fingerprints(o)]
    at_kill = {"edited object": ip.fingerprints(edited), "library": ip.fingerprints(library)}
    assert at_kill["edited object"] == (["2"] if step == "link" or output == "written" else [])
    assert at_kill["library"] == (["2"] if step == "link" and output == "written" else
                                  [] if step == "link" else ["1"])
    out, err = _interrupt(proc, sig, marker)
    ip.unstall(root)
    ip.wait_gone(ip.leftovers(root))
    said = f"{sig} at the {step} ({output} output: {at_kill}), exit {proc.returncode}"

    for value in (1, 2, 1):   # the undo, the redo, the undo again
        _fingerprint(module, value)
        run = scons(root, *args)
        [library] = _found(os.path.join(root, "build"), ".so")
        assert ip.fingerprints(library) == [str(value)], (
            f"`scons` after {said}: the source says v{value}, the library holds {ip.fingerprints(library)}\n"
            f"the killed run's stderr: {err[-600:]}\nthis run:\n{run.stdout[-1500:]}")


# --- the editable install's rebuild on import ---------------------------------

NAME = "demo_ops"
# The stand-in library cannot be imported: find_spec is the import up to
# running the package's __init__, the rebuild included (editable.EditableFinder).
FIND = f"import importlib.util; importlib.util.find_spec({NAME!r})"


@pytest.fixture
def editable(tmp_path, no_leftovers):
    """A `new` project whose kernel source carries v1, installed editable
    (pip install -e --no-build-isolation, into a venv without pip of its own,
    as tests/ship/test_ship.py does: ~2 s, no compiler) with the stalling
    stand-in: (venv python, project, its library, environment)."""
    path = ship.this_checkout(tmp_path)
    ship.new(tmp_path, NAME, path)
    project = os.path.join(str(tmp_path), NAME)
    _fingerprint(os.path.join(project, "csrc", "kernels.cpp"), 1)
    ship.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", tmp_path / "venv"],
             tmp_path, ship.environ(path))
    py = str(tmp_path / "venv" / "bin" / "python")
    ship.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
              "-C", f"CXX={ip.stalling_cxx(tmp_path)}", "-e", project], tmp_path, ship.environ(path))
    library = os.path.join(project, ship.BUILD, NAME, "_C.so")
    assert ip.fingerprints(library) == ["1"]
    return py, project, library, ship.environ(path)


def _import(editable, value):
    """The kernel source set to `value`, then an import (its rebuild):
    the fingerprints in the library the package would load."""
    py, project, library, env = editable
    _fingerprint(os.path.join(project, "csrc", "kernels.cpp"), value)
    proc = ship.run([py, "-c", FIND], "/", env, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ip.fingerprints(library)


# The orphan only where its stall can be released: one stalled by the
# stand-in itself sleeps its full minute.
EDITABLE_CASES = [(step, output, how) for step, output in STALLS for how in SIGNALS + ["orphan"]
                  if how != "orphan" or output == "written"]


@pytest.mark.parametrize("step,output,how", _sampled(EDITABLE_CASES, EDITABLE_SAMPLE))
@pytest.mark.compile
def test_an_editable_rebuild_interrupted_then_undone_gives_the_undone_library(editable, tmp_path, step,
                                                                              output, how):
    py, project, library, env = editable
    kernels = os.path.join(project, "csrc", "kernels.cpp")
    _fingerprint(kernels, 2)
    marker = ip.stall_at(project, step, str(tmp_path / f"stalled-{step}"), written=output == "written")
    proc = subprocess.Popen([py, "-c", FIND], cwd="/", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    _interrupt(proc, how, marker)
    said = f"{how} at the {step} ({output} output), exit {proc.returncode}"
    seen = []
    if how == "orphan":
        # The killed import's SCons goes on: the next import (the edit
        # undone) starts while it is still stalled; once that import waits
        # behind it (the generated folder's lock) or has finished, the
        # orphan finishes too.
        orphans = ip.leftovers(project)
        assert orphans, "the killed import's build was not left running"
        _fingerprint(kernels, 1)
        undo = subprocess.Popen([py, "-c", FIND], cwd="/", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            ip.wait_for_waiter(os.path.join(project, ship.BUILD, "gen", ".autograd_lock"), undo)
            ip.unstall(project)
            ip.wait_gone(orphans)
            out, err = undo.communicate(timeout=120)
        finally:
            if undo.poll() is None:
                undo.kill()
                undo.communicate()
        assert undo.returncode == 0, err[-3000:]
        seen.append(ip.fingerprints(library))
    else:
        ip.unstall(project)   # a `written` stall goes on and ends; a half-written one sleeps on
        left = ip.leftovers(project)
        if output == "written":
            ip.wait_gone(left)
    # The next import reaps whatever the killed build left running in the
    # folder (lock.py) before it builds.
    seen.append(_import(editable, 1))
    assert not ip.leftovers(project), f"after {said}: the killed build's processes outlived the next import"
    seen += [_import(editable, value) for value in (2, 1)]
    want = ([["1"]] if how == "orphan" else []) + [["1"], ["2"], ["1"]]
    assert seen == want, f"editable import after {said}: sources {want}, libraries {seen}"


@pytest.mark.compile
def test_an_editable_import_never_trusts_a_library_changed_behind_its_back(editable):
    # A library that is not the one the last build made (a killed build's
    # linker finishing late, a copy from elsewhere): the next import
    # rebuilds it from the sources, however up to date the inputs look.
    py, project, library, env = editable
    with open(library, "rb") as f:
        built = f.read()
    with open(library, "wb") as f:
        f.write(built.replace(b"AGF_FINGERPRINT(v1)", b"AGF_FINGERPRINT(v7)"))
    assert ip.fingerprints(library) == ["7"]
    assert _import(editable, 1) == ["1"]
