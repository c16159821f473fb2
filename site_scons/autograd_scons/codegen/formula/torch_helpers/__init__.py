"""FunctionsManual's helpers in Python: the functions torch's formulas call
by name (`handle_r_to_c`, `sum_backward`, ...), each written from the math
of the derivative it serves, for the Python autograd the stable target
generates.  Needs only torch at run time: generated code imports it (or a
copy of it).  HELPERS names what it defines for the translator (name ->
the type of what it returns).

Complex inputs: where a helper's complex case is not written (or not
proved by the differential, which runs float64), it raises
NotImplementedError instead of guessing.

Modules: shapes.py (the shared pieces, types and shapes), elementwise.py
(arithmetic, linear algebra, reductions, lists), nonlinear.py (norms,
products, double backward).  Generated code imports this package (or a
copy of its folder): it imports nothing but torch.
"""

from __future__ import annotations

from . import shapes as _shapes, elementwise as _elementwise, nonlinear as _nonlinear
from .shapes import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .nonlinear import *  # noqa: F401,F403
from .nonlinear import _to_copy_backward  # noqa: F401 (a helper whose name starts with _)

# Helpers whose torch name is private (codegen/formula/helper_names.py reads
# this, _RETURNS and the modules' sources without importing the package).
_PRIVATE_HELPERS = ("_to_copy_backward",)

# What a helper returns where it is not a Tensor (the translator's types).
_RETURNS = {"clamp_backward_min_max": "tuple", "atan2_backward": "tuple", "cat_tensors_backward": "Tensor[]",
            "stack_tensors_backward": "Tensor[]", "to_args_sizes": "int[][]", "to_args_sizes_symint": "int[][]",
            "to_args_scalartypes": "ScalarType[]", "strides_or_error": "int[]",
            "polar_backward": "tuple", "block_diag_backward": "Tensor[]"}

HELPERS = {name: _RETURNS.get(name, "Tensor")
           for module in (_shapes, _elementwise, _nonlinear)
           for name, value in vars(module).items()
           if (not name.startswith("_") or name in _PRIVATE_HELPERS) and callable(value) and getattr(value, "__module__", None) == module.__name__}
