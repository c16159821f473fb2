"""Python side of the example extension: finds the library `scons` built and
loads it, which registers the `myops::` operators with torch.

    import myops
    ops = myops.load()          # torch.ops.myops
    y = ops.bmul(a, b)

The library is looked up at `$MYOPS_LIBRARY`, else in the repo's default
build folder (`build/example/myops_ext.so`).
"""

from __future__ import annotations

import glob
import os
from typing import Optional

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_loaded: dict = {}


def library_path(build_dir: Optional[str] = None) -> str:
    env = os.environ.get("MYOPS_LIBRARY")
    if env and build_dir is None:
        return env
    folder = os.path.join(build_dir or os.path.join(_REPO, "build"), "example")
    found = sorted(glob.glob(os.path.join(folder, "myops_ext*.so")))
    if not found:
        raise FileNotFoundError(f"no myops_ext*.so in {folder}: run `scons` at the repo root first")
    return found[0]


def load(path: Optional[str] = None):
    """Load the extension once per process; returns the `torch.ops.myops` namespace."""
    import torch

    path = os.path.abspath(path or library_path())
    if path not in _loaded:
        if _loaded:
            raise RuntimeError(f"myops is already loaded from {next(iter(_loaded))}; one copy per process")
        torch.ops.load_library(path)
        _loaded[path] = True
    return torch.ops.myops
