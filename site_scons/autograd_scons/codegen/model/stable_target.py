"""The stable target's option: the oldest torch an extension built against
PyTorch's stable ABI supports (stable.py maps its types).

    StableTarget.parse("2.10").define    # '0x020a000000000000'

Apart from the types' mapping, which needs the schema model: every build
reads its request's `stable=`, and most import nothing of the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from autograd_scons.base.errors import OptionError

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
