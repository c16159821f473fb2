"""The stable target: an extension built against PyTorch's stable ABI
(torch/csrc/stable/, torch/headeronly/), whose one build loads in every torch
from the targeted one on.  Its kernels take `torch::stable::Tensor`; its
autograd is Python (codegen/emit/stable_python/), because the stable ABI has
none.

    stable_parameter_type(arg)          # 'const torch::stable::Tensor&'

(The target itself, `StableTarget`, is in stable_target.py.)

The types are those `TORCH_BOX` converts from the dispatcher's stack
(stableivalue_conversions.h of torch 2.10+); a schema type without one is
refused with the reason, never mapped to something that would box wrong.
"""

from __future__ import annotations

from typing import Sequence

from autograd_scons.base.errors import FormulaError
from .schema import Argument, BaseType, ListType, OptionalType, Return, Type

STABLE_TENSOR = "torch::stable::Tensor"
# Schema base types -> the value type a boxed stable kernel receives.
_VALUES = {
    "Tensor": STABLE_TENSOR,
    "float": "double",
    "int": "int64_t",
    "SymInt": "int64_t",
    "bool": "bool",
    "str": "std::string",
    "ScalarType": "torch::headeronly::ScalarType",
    "Layout": "torch::headeronly::Layout",
    "MemoryFormat": "torch::headeronly::MemoryFormat",
    "Device": "torch::stable::Device",
}
# Why the others have no stable spelling (2.13's conversions).
_REFUSED = {
    "Scalar": "a Scalar has no stable conversion (torch 2.13's StableIValue cannot carry one): "
              "declare it `float` (double) or `int`",
}


def _value(t: Type, where: str) -> str:
    if isinstance(t, BaseType):
        if t.name in _VALUES:
            return _VALUES[t.name]
        raise FormulaError(f"{where}: {_REFUSED.get(t.name, f'type {t.name!r} has no stable-ABI conversion')}")
    if isinstance(t, OptionalType):
        return f"std::optional<{_value(t.elem, where)}>"
    if isinstance(t, ListType):
        return f"std::vector<{_value(t.elem, where)}>"
    raise FormulaError(f"{where}: type '{t}' has no stable-ABI conversion")


def stable_parameter_type(a: Argument) -> str:
    """How a stable kernel declares argument `a`: a tensor by const
    reference, everything else by value.  A written argument (`Tensor(a!)`)
    is refused: the stable target's ops are functional."""
    if a.is_write:
        raise FormulaError(f"argument '{a.name}' is written ({a.type}(a!)): the stable target "
                           f"generates functional ops only")
    value = _value(a.type, f"argument '{a.name}'")
    return f"const {value}&" if value == STABLE_TENSOR else value


def stable_return_type(returns: Sequence[Return]) -> str:
    """The kernel's return type: void, the one value, or a std::tuple."""
    values = [_value(r.type, f"return '{r.name or i}'") for i, r in enumerate(returns)]
    if any(r.annotation is not None for r in returns):
        raise FormulaError("an aliased return (Tensor(a)) has no stable-ABI kernel here: "
                           "the stable target generates functional ops only")
    return "void" if not values else values[0] if len(values) == 1 else f"std::tuple<{', '.join(values)}>"
