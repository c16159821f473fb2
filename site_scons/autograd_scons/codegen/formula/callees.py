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
                                        tuple(a.name for a in args.kwarg_only), _returns(f),
                                        tuple(schema_type(str(a.type)) for a in args.positional + args.kwarg_only)))
        if "function" in f.variants:
            module = f.raw.get("python_module")
            where[name].add(_MODULES.get(module, UNKNOWN))
        method[name] |= "method" in f.variants
    out = {}
    for name, ovs in overloads.items():
        mods = where.get(name, set())
        out[name] = Callee(name, _home(name, mods), method[name], tuple(ovs))
    return out


def _home(name: str, modules: set) -> str:
    """`torch.NAME` for a public function of torch's namespace; the op
    itself (`torch.ops.aten.NAME`, resolved by the dispatcher as C++ resolves
    it) for the rest: torch binds no Python function for most `_backward`,
    `_forward`, private and module (`nn`, `linalg`...) names the formulas
    call, and which it binds is not in native_functions.yaml."""
    public = not name.startswith("_") and not any(w in name for w in _UNBOUND_WORDS) and name not in _UNBOUND
    if modules == {"torch"} and public:
        return f"torch.{name}"
    return f"torch.ops.aten.{name}"


_UNBOUND_WORDS = ("backward", "forward", "_jvp")
# Public ATen functions torch binds no Python function for (Python indexes
# with [] instead; the lift ops are the tracer's).
_UNBOUND = frozenset(["index", "slice", "lift", "lift_fresh", "lift_fresh_copy"])
