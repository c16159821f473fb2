${banner}
"""The autograd of the ${namespace} extension's ops, generated from its
derivatives.yaml for the stable-ABI target: importing this module registers,
for each op, its Autograd kernel (backward and forward formulas), its fake
kernel, its autocast and vmap rules.  It needs torch and the modules beside
it only (${runtime}: the run-time support)."""

import importlib as _importlib
import importlib.util as _importlib_util
import os as _os
import sys as _sys

import torch


def _beside(name):
    """The module or package `name` next to this file (imported relative to
    the package this one is in, or from its path)."""
    if __package__:
        return _importlib.import_module(f"{__package__}.{name}")
    path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), name)
    qualified = f"${namespace}_{name}"
    if _os.path.isdir(path):
        spec = _importlib_util.spec_from_file_location(qualified, _os.path.join(path, "__init__.py"),
                                                       submodule_search_locations=[path])
    else:
        spec = _importlib_util.spec_from_file_location(qualified, path + ".py")
    module = _importlib_util.module_from_spec(spec)
    _sys.modules[qualified] = module   # (a package's modules import each other through it)
    spec.loader.exec_module(module)
    return module


_rt = _beside("${runtime}")
${helpers}

# Every registration of this module; released when the module is.
_lib = torch.library.Library("${namespace}", "IMPL")
${ops}
