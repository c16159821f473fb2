"""An extension op under the two transforms ATen's ops know: its autocast
policy (`autocast:`) and its batch rule under vmap (`vmap:`), as parsed and
checked (parse/transform_keys.py); what they generate is emit/op_kernels/autocast.py
and emit/op_kernels/vmap.py.

    - func: myops::affine(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
      autocast: lower_precision_fp          # or {CPU: fp32, CUDA: lower_precision_fp}
      vmap: pointwise                       # or leading_dims, or {rule: NAME}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# ATen's CastPolicy enumerators (ATen/autocast_mode.h), by their own names.
LOWER_PRECISION_FP = "lower_precision_fp"
FP32 = "fp32"
FP32_SET_OPT_DTYPE = "fp32_set_opt_dtype"
FP32_APPEND_DTYPE = "fp32_append_dtype"
PROMOTE = "promote"
POLICIES = (LOWER_PRECISION_FP, FP32, FP32_SET_OPT_DTYPE, FP32_APPEND_DTYPE, PROMOTE)

# The device types an extension builds kernels for, each with the dispatch
# key of its autocast (ATen's get_autocast_dispatch_key_from_device_type).
AUTOCAST_KEYS = {"CPU": "AutocastCPU", "CUDA": "AutocastCUDA"}

# The batch rules the tool writes, by kind (ATen's helpers for the same
# shapes: POINTWISE_BOXED / BINARY_POINTWISE, VARIADIC_BDIMS), and a rule
# written by hand.
POINTWISE = "pointwise"
LEADING_DIMS = "leading_dims"
RULE = "rule"
KINDS = (POINTWISE, LEADING_DIMS)


@dataclass(frozen=True)
class Redispatch:
    """What an fp32_append_dtype op redispatches to: the overload of the same
    op that takes a trailing ScalarType (ATen's norm.Scalar to
    norm.ScalarOpt_dtype), with its dispatcher's C++ signature."""
    overload: str
    ret: str
    params: tuple[str, ...]
    dtype: str          # the name of its trailing ScalarType argument


@dataclass(frozen=True)
class Autocast:
    """`autocast:` of an extension's op: ATen's cast policy per device type."""
    policies: tuple[tuple[str, str], ...]   # (device type, policy), CPU first
    line: int                               # the line of `autocast:`
    redispatch: Optional[Redispatch] = None  # fp32_append_dtype's target


# `fake:` of an extension op: its fake kernel in the stable target (the
# C++ target's fake tensors run the Meta or CompositeExplicitAutograd kernel).
FAKE_POINTWISE = "pointwise"   # the tensor inputs' broadcast shape and promoted dtype
FAKE_LIKE = "like"             # every output shaped and typed as one argument
FAKE_PYTHON = "python"         # a Python function, `module.function`


@dataclass(frozen=True)
class Fake:
    """`fake:` of an extension's op: how its outputs follow its inputs."""
    kind: str                 # FAKE_POINTWISE, FAKE_LIKE or FAKE_PYTHON
    name: Optional[str]       # FAKE_LIKE: the argument; FAKE_PYTHON: module.function
    line: int                 # the line of `fake:`


@dataclass(frozen=True)
class Vmap:
    """`vmap:` of an extension's op: its batch rule, by kind or by name."""
    kind: str                 # POINTWISE, LEADING_DIMS or RULE
    rule: Optional[str]       # RULE: the hand-written rule, in <ns>::native
    line: int                 # the line of `vmap:`
