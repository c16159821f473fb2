"""autograd-functions-scons, the one package `autograd_scons`: PyTorch's
autograd code generator as an incremental SCons builder, for torch
extensions.

In a checkout this package is the folder `site_scons/` (SCons's site
folder: its site_init.py registers it under this name for a build), and the
generator is `codegen/` beside it (`site_scons/codegen` links to it).

    autograd_scons.codegen    the generator: yaml -> model -> C++ (no SCons, no torch)
    autograd_scons.tool       the SCons tool (site_tools/ names it for SCons)
    autograd_scons.buildenv   the build environment and the machinery of builds started from Python
    autograd_scons.jit        load() and load_inline()
    autograd_scons.ship       new projects, wheels, the editable install
    autograd_scons.build_meta the PEP 517 backend;  autograd_scons.extension: a project's SConstruct API

From an SConstruct outside any checkout:

    import autograd_scons
    env.Tool("autograd_functions", toolpath=[autograd_scons.TOOLPATH])

From Python: `from autograd_scons import load, load_inline`.

The modules that were at the top of this package before it became one
(`from autograd_scons import torch_flags, verified_cache`, ...) still
import from here, with a DeprecationWarning naming their new place
(moved_names.py).
"""

import os

# The folder holding the SCons tools (autograd_functions.py, ...): pass it as toolpath.
TOOLPATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site_tools")


def __getattr__(name):
    # load/load_inline imported on first use: `import autograd_scons` (an
    # SConstruct's) stays free of torch
    if name in ("load", "load_inline", "LoadError"):
        from autograd_scons.jit import loader
        return getattr(loader, name)
    if not name.startswith("_"):
        import importlib
        moved = importlib.import_module("autograd_scons.moved_names")
        if name in moved.MOVED:
            return moved.resolve(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
