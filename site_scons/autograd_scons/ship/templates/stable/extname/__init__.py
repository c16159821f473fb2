"""extname: its operators, registered with torch when this package is
imported, are `torch.ops.extname.*` (also `extname.ops`).  Built on
PyTorch's stable ABI: one build for every torch from the project's target on.

`_C_autograd.py`, generated beside the library `_C.so`, loads it and
registers the operators' autograd (Python, from derivatives.yaml)."""

import torch

from . import _C_autograd  # noqa: F401  (loads _C.so beside it, then registers the autograd)

ops = torch.ops.extname
