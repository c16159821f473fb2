"""The example extension (specs/) and the test extensions under tests/fixtures/,
built once per test session into a temporary build folder (`scons UNITY=2
-j2 OPT=-O0 BUILD=...` from this checkout), for the test modules that run
their ops (not a test module itself).  `AGF_TEST_BUILD_<NAME>=DIR` (NAME:
the example folder's name in capitals, e.g. SPECS, NIMPL_EXT) builds into DIR
instead, incrementally across sessions; `AGF_TEST_CXX=clang++` builds with
that compiler (tests/example/test_clang_example.py)."""

import glob
import os
import sys

from support.scons_helpers import REPO, scons

_built: dict = {}


def build(tmp_path_factory, example: str = "specs") -> str:
    """The build folder of `example` (a folder of this checkout), built once."""
    if example not in _built:
        name = os.path.basename(example)
        folder = os.environ.get("AGF_TEST_BUILD_" + name.upper()) or str(tmp_path_factory.mktemp("build-" + name))
        cxx = [f"CXX={os.environ['AGF_TEST_CXX']}"] if os.environ.get("AGF_TEST_CXX") else []
        scons(REPO, "UNITY=2", "-j2", "OPT=-O0", f"BUILD={folder}", f"EXAMPLE={example}", *cxx)
        _built[example] = folder
    return _built[example]


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
