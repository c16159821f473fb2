"""What torch's own build knows of its Autograd kernels beyond the specs,
read from the installed torchgen's `gen_variable_type` module as data (its
source parsed, never imported or run): the ops whose kernels let complex
outputs be differentiated.  libtorch's kernel of any other op raises
"<op> does not support automatic differentiation for outputs with complex
dtype"; a patch's kernel must do the same (emit/aten_kernels/aten_kernel.py).

    complex_ops(derivatives_yaml_path)   # frozenset of base names, e.g. {"add", "mul", ...}
"""

from __future__ import annotations

import ast
import os

_LISTS = ("GRADIENT_IMPLEMENTED_FOR_COMPLEX", "GRADIENT_IMPLEMENTED_FOR_SPARSE_COMPLEX")


def complex_ops(derivatives: str) -> frozenset:
    """The union of torch's two lists, from the gen_variable_type module beside
    `derivatives` (torchgen's packaged derivatives.yaml).  Raises OSError,
    or ValueError when the lists are not set literals of strings there."""
    path = os.path.join(os.path.dirname(os.path.abspath(derivatives)), "gen_variable_type.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in _LISTS:
            value = ast.literal_eval(node.value)
            if not isinstance(value, set) or not all(isinstance(x, str) for x in value):
                raise ValueError(f"{path}: {node.targets[0].id} is not a set of op names")
            found[node.targets[0].id] = value
    if _LISTS[0] not in found:
        raise ValueError(f"{path}: no {_LISTS[0]}: not torch's gen_variable_type module")
    return frozenset().union(*found.values())
