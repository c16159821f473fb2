"""The example extension (specs/) and the test extensions under tests/fixtures/,
built once per test session into a temporary build folder (`scons UNITY=2
-j2 OPT=-O0 PCH=1 BUILD=...` from this checkout), for the test modules that run
their ops (not a test module itself).  `AGF_TEST_BUILD_<NAME>=DIR` (NAME:
the example folder's name in capitals, e.g. SPECS, NIMPL_EXT) builds into DIR
instead, incrementally across sessions; `AGF_TEST_CXX=clang++` builds with
that compiler (tests/example/test_clang_example.py).  In a pytest-xdist run
the workers share one build of each (the session's folder, tests/conftest.py)."""

import glob
import os
import sys

from support.scons_helpers import REPO, scons

_built: dict = {}


def build(tmp_path_factory, example: str = "specs") -> str:
    """The build folder of `example` (a folder of this checkout), built once."""
    if example not in _built:
        name = os.path.basename(example)
        cxx = [f"CXX={os.environ['AGF_TEST_CXX']}"] if os.environ.get("AGF_TEST_CXX") else []
        # PCH=1: the session's shared prelude (support/scons_helpers.prelude_dir)
        args = ("UNITY=2", "-j2", "OPT=-O0", "PCH=1", f"EXAMPLE={example}", *cxx)
        given = os.environ.get("AGF_TEST_BUILD_" + name.upper())
        if given:
            scons(REPO, f"BUILD={given}", *args)
            _built[example] = given
        elif os.environ.get("AGF_TEST_SESSION_DIR"):
            _built[example] = _session_build(name, args)
        else:
            folder = str(tmp_path_factory.mktemp("build-" + name))
            scons(REPO, f"BUILD={folder}", *args)
            _built[example] = folder
    return _built[example]


def _session_build(name: str, args: tuple) -> str:
    """The session's build of the example (tests/conftest.py's folder): the
    first pytest-xdist worker to ask builds it, under a lock, and the other
    waits for it instead of building its own.  Keyed by everything that
    makes another library: the arguments (the compiler), this Python and
    its torch (a child run in the cuda tier's venv builds its own)."""
    import fcntl
    import hashlib

    import torch
    key = hashlib.sha256(repr((args, sys.executable, torch.__version__, REPO)).encode()).hexdigest()[:16]
    root = os.path.join(os.environ["AGF_TEST_SESSION_DIR"], "examples")
    os.makedirs(root, exist_ok=True)
    folder = os.path.join(root, f"{name}-{key}")
    with open(folder + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(folder + ".built"):  # (a failed build left none: built again)
            scons(REPO, f"BUILD={folder}", *args)
            open(folder + ".built", "w").close()
    return folder


def library(tmp_path_factory, example: str, stem: str) -> str:
    found = glob.glob(os.path.join(build(tmp_path_factory, example), "example", stem + "*.so"))
    assert len(found) == 1, found
    return found[0]


def myops(tmp_path_factory):
    """torch.ops.myops, loaded from this session's build (or from the copy
    another test module already loaded: one per process, same sources)."""
    sys.path.insert(0, os.path.join(REPO, "specs", "python"))
    try:
        import myops as loader
    finally:
        sys.path.pop(0)
    if loader._loaded:
        return loader.load(next(iter(loader._loaded)))
    return loader.load(library(tmp_path_factory, "specs", "myops_ext"))
