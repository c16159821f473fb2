"""extname: its operators, registered with torch when this package is
imported, are `torch.ops.extname.*` (also `extname.ops`)."""

import glob
import os
import re

import torch


def _build():
    """`cpu`, `cu130` (CUDA 13.0) or `rocm...`: the running torch's build."""
    if getattr(torch.version, "hip", None):
        return "rocm" + torch.version.hip
    return "cu" + "".join(torch.version.cuda.split(".")[:2]) if torch.version.cuda else "cpu"


def _variant(paths):
    # A merged wheel (merge-wheels) carries one library per torch minor and
    # build: _C/torch2.13_cpu.so, _C/torch2.14_cu130.so.  Each links that
    # torch's C++ ABI, so only the running torch's minor and build (CPU, or
    # its CUDA major) is loaded: never a CPU one under a CUDA or ROCm torch,
    # nor the other way round (their libtorch differ).
    minor = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    build = _build()
    found = {}
    for path in paths:
        m = re.fullmatch(r"torch(\d+\.\d+)_(cpu|cu(\d+))\.so", os.path.basename(path))
        same_build = m and (m.group(2) == build if build == "cpu" else
                            build.startswith("cu") and m.group(3) and m.group(3)[:-1] == build[2:-1])
        if same_build and m.group(1) == minor:
            found[m.group(2)] = path
    if found:  # this CUDA's own build first, else the newest of its major
        return found.get(build) or found[sorted(found)[-1]]
    carried = ", ".join(sorted(os.path.basename(p)[:-3] for p in paths))
    raise ImportError(f"extname: no library for torch {torch.__version__} ({build}) among those this package "
                      f"carries: {carried} (install a torch one of them was built for, or build extname from source)")


def _library():
    # Installed, the library sits beside this file; in an editable install
    # the package's path also holds the build folder's copy.
    for folder in __path__:
        variants = sorted(glob.glob(os.path.join(folder, "_C", "torch*.so")))
        if variants:
            return _variant(variants)
        found = sorted(glob.glob(os.path.join(folder, "_C*.so")))
        if found:
            return found[0]
    raise ImportError(f"extname: no _C.so in {list(__path__)}: build it (`pip install .`, or `scons` "
                      "and use build/extname)")


torch.ops.load_library(_library())
ops = torch.ops.extname
