"""autograd-functions-scons, the one package `autograd_scons`: PyTorch's
autograd code generator as an incremental SCons builder, for torch
extensions.

In a checkout this package is the folder `site_scons/autograd_scons/`:
SCons puts `site_scons/` on sys.path for the checkout's SConstruct, and an
editable install puts it there for Python, so every module is found where
its name says, by the import system alone.  The generator,
`autograd_scons.codegen`, is its folder `codegen/` (the checkout's top-level
`codegen` links to it).  It has that one name: `import codegen` fails.

    autograd_scons.codegen    the generator: yaml -> model -> C++ (no SCons, no torch)
    autograd_scons.tool       the SCons tool (site_tools/ names it for SCons)
    autograd_scons.buildenv   the build environment and the machinery of builds started from Python
    autograd_scons.jit        load() and load_inline()
    autograd_scons.ship       new projects, wheels, the editable install
    autograd_scons.torch_patch patch-torch / run-patched: edited formulas run in the installed torch
    autograd_scons.build_meta the PEP 517 backend;  autograd_scons.extension: a project's SConstruct API

From an SConstruct outside any checkout:

    import autograd_scons
    env.Tool("autograd_functions", toolpath=[autograd_scons.TOOLPATH])

From Python: `from autograd_scons import load, load_inline`, and
`autograd_scons.patched_functions()` (which of torch's own Functions a patch
replaces in this process).  Every error meant for a person to read derives
from `autograd_scons.Error` (one line: what is wrong, where, what to do),
load()'s `LoadError` among them.

The modules that were at the top of this package before it became one
(`from autograd_scons import torch_flags, verified_cache`, ...) still
import from here, with a DeprecationWarning naming their new place
(moved_names.py).
"""

from autograd_scons.base.errors import Error
from autograd_scons.tool.toolpath import TOOLPATH

__all__ = ["Error", "LoadError", "PatchNotInEffect", "TOOLPATH", "load", "load_inline", "patched_functions"]


def __getattr__(name):
    # load/load_inline imported on first use: `import autograd_scons` (an
    # SConstruct's) stays free of torch
    if name in ("load", "load_inline", "LoadError"):
        from autograd_scons.jit import loader
        return getattr(loader, name)
    if name in ("patched_functions", "PatchNotInEffect"):
        from autograd_scons.torch_patch import preload
        return getattr(preload, name)
    if not name.startswith("_"):
        import autograd_scons.moved_names as moved
        if name in moved.MOVED:
            return moved.resolve(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
