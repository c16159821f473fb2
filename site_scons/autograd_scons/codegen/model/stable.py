"""The stable target: an extension built against PyTorch's stable ABI
(torch/csrc/stable/, torch/headeronly/), whose one build loads in every torch
from the targeted one on.  Its kernels take `torch::stable::Tensor`; its
autograd is Python (codegen/emit/stable_python/), because the stable ABI has
none.

    StableTarget.parse("2.10").define    # '0x020a000000000000'
    stable_parameter_type(arg)          # 'const torch::stable::Tensor&'

The types are those `TORCH_BOX` converts from the dispatcher's stack
(stableivalue_conversions.h of torch 2.10+); a schema type without one is
refused with the reason, never mapped to something that would box wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from autograd_scons.base.errors import FormulaError, OptionError
from .schema import Argument, BaseType, ListType, OptionalType, Return, Type

# The oldest torch `stable=True` targets: TORCH_BOX, torch_call_dispatcher and
# STABLE_TORCH_LIBRARY's current spelling are all there from 2.10.
DEFAULT_STABLE = (2, 10)
_OLDEST = (2, 9)  # the stable ABI's first release
_VERSION_RE = re.compile(r"(\d+)\.(\d+)")


@dataclass(frozen=True)
class StableTarget:
    """The oldest torch a stable build supports (major, minor)."""
    major: int
    minor: int

    @classmethod
    def parse(cls, value) -> Optional["StableTarget"]:
        """`stable=` as a user gives it: False/None/"" (the C++ target), True
        (DEFAULT_STABLE), "2.10" or (2, 10).  Raises OptionError naming the value."""
        if isinstance(value, cls) or value is None:
            return value
        if isinstance(value, bool) or value in (0, 1, "0", "1"):
            return cls(*DEFAULT_STABLE) if value in (True, 1, "1") else None
        m = _VERSION_RE.fullmatch(value.strip()) if isinstance(value, str) else None
        if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) for v in value):
            found = (value[0], value[1])
        elif isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "false", "no", "off", ""):
            return cls(*DEFAULT_STABLE) if value.strip().lower() in ("true", "yes", "on") else None
        elif m is not None:
            found = (int(m.group(1)), int(m.group(2)))
        else:
            raise OptionError(f"stable must be True, False or the oldest torch to support like '2.10', "
                              f"not {value!r}")
        if found < _OLDEST or found[0] > 255 or found[1] > 255:
            raise OptionError(f"stable={value!r}: the stable ABI starts at torch "
                              f"{_OLDEST[0]}.{_OLDEST[1]}; name a version from there on, like '2.10'")
        return cls(*found)

    @property
    def version(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def define(self) -> str:
        """TORCH_TARGET_VERSION's value: major<<56 | minor<<48 (torch/csrc/stable/version.h)."""
        return f"0x{(self.major << 56 | self.minor << 48):016x}"

    def cpp_defines(self) -> list:
        """What the user's kernels and the generated registration compile with:
        the target, and TORCH_STABLE_ONLY, which makes every unstable torch
        header an #error at the line that includes it."""
        return [("TORCH_TARGET_VERSION", self.define), "TORCH_STABLE_ONLY"]


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
