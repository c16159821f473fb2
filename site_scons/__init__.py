"""The SCons side of autograd-functions-scons, installed as `autograd_scons`.

In a checkout this folder is `site_scons/`, which SCons puts on `sys.path`
(its helpers import by their own names, `import torch_flags`) and whose
`site_tools/` it searches for tools.  Installed (`pip install`), the same
files are the package `autograd_scons`, for builds outside any checkout:

    import autograd_scons
    from autograd_scons import torch_flags, verified_cache
    env.Tool("autograd_functions", toolpath=[autograd_scons.TOOLPATH])

From Python, `load()` and `load_inline()` (jit_load.py) build an
extension through the same SCons build and load it:

    from autograd_scons import load, load_inline

Every module in this folder and in site_tools/ is installed (setup.py
packages the folders, not a list of modules).
"""

import os

# The folder holding the SCons tools (autograd_functions.py, ...): pass it as toolpath.
TOOLPATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site_tools")


def __getattr__(name):
    # load/load_inline imported on first use: `import autograd_scons` (an
    # SConstruct's) stays free of torch
    if name in ("load", "load_inline", "LoadError"):
        from . import jit_load
        return getattr(jit_load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
