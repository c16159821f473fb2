"""What the ATen functions a formula calls look like from Python, built
from parsed native functions (the project's parser's NativeFunction list):
a name's overloads (which arguments are keyword-only in Python, though C++
passes them by position), what it returns, and where torch has it
(`torch.sum`, `torch._C._nn.mse_loss`, or only as a Tensor method).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ..model.native import NativeFunction
from .names import UNKNOWN, Callee, Overload, schema_type

# python_module: -> the Python module that holds the function variant.
_MODULES = {None: "torch", "nn": "torch._C._nn", "linalg": "torch._C._linalg", "special": "torch._C._special",
            "fft": "torch._C._fft", "sparse": "torch._C._sparse", "nested": "torch._C._nested"}


def _returns(f: NativeFunction) -> str:
    rets = f.func.returns
    if len(rets) == 0:
        return "None"
    if len(rets) > 1:
        return "tuple"
    return schema_type(str(rets[0].type))


def callees(functions: Iterable[NativeFunction]) -> dict[str, Callee]:
    """name (without overload; in-place names keep their `_`) -> Callee."""
    overloads: dict[str, list[Overload]] = defaultdict(list)
    where: dict[str, set] = defaultdict(set)
    method: dict[str, bool] = defaultdict(bool)
    for f in functions:
        if f.func.is_out_fn() or f.generated and f.func.name.name.endswith("_out"):
            continue
        name = f.func.name.name
        args = f.func.arguments
        overloads[name].append(Overload(tuple(a.name for a in args.positional),
                                        tuple(a.name for a in args.kwarg_only), _returns(f)))
        if "function" in f.variants:
            module = f.raw.get("python_module")
            where[name].add(_MODULES.get(module, UNKNOWN))
        method[name] |= "method" in f.variants
    out = {}
    for name, ovs in overloads.items():
        mods = where.get(name, set())
        python = f"{next(iter(mods))}.{name}" if len(mods) == 1 and UNKNOWN not in mods else None
        if python is None and not method[name]:
            python = f"torch.ops.aten.{name}"
        out[name] = Callee(name, python, method[name], tuple(ovs))
    return out
