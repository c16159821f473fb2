${banner}
"""The autograd of the ${namespace} extension's ops, generated from its
derivatives.yaml for the stable-ABI target: importing this module registers,
for each op, its Autograd kernel (backward and forward formulas), its fake
kernel, its autocast and vmap rules.  It needs torch and the files beside it
only (${runtime}.py: the run-time support)."""

import importlib.util as _importlib_util
import os as _os

import torch

if __package__:
    from . import ${runtime} as _rt
else:   # loaded from its path: the support module beside it
    _spec = _importlib_util.spec_from_file_location(
        "${namespace}_${runtime}", _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "${runtime}.py"))
    _rt = _importlib_util.module_from_spec(_spec)
    _spec.loader.exec_module(_rt)
${helpers}

# Every registration of this module; released when the module is.
_lib = torch.library.Library("${namespace}", "IMPL")
${ops}
