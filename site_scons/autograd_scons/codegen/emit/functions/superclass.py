"""Which base class a generated Function derives from.

libtorch's view functions compute their backward with as_strided, which the
JIT tracer cannot record, so their Functions are plain `Node`s; every other
Function is a `TraceableFunction`.  The set is PyTorch's list of view
functions (metadata-changing views included), keyed by base name.  It is
data about PyTorch, not derivable from the yaml: `chunk` or `narrow` return
views too, yet are traceable.
"""

from __future__ import annotations

from ...model.autograd import DifferentiabilityInfo

UNTRACEABLE_VIEW_FUNCTIONS = frozenset({
    "_conj", "_indices", "_neg_view", "_nested_get_values", "_nested_view_from_buffer",
    "_nested_view_from_jagged", "_reshape_alias", "_test_autograd_multiple_dispatch_view",
    "_values", "alias", "as_strided", "ccol_indices", "col_indices", "crow_indices",
    "diagonal", "expand", "flatten", "indices", "numpy_T", "permute", "row_indices",
    "select", "slice", "slice_inverse", "sparse_coo_tensor_with_dims_and_tensors", "split",
    "split_with_sizes", "squeeze", "t", "transpose", "unbind", "unfold", "unsqueeze",
    "values", "view", "view_as_complex", "view_as_real",
})


def superclass(info: DifferentiabilityInfo) -> str:
    # A view_copy info is named `x_copy.`, so it is never in the set: a copy
    # is traceable.
    return "Node" if info.name in UNTRACEABLE_VIEW_FUNCTIONS else "TraceableFunction"
