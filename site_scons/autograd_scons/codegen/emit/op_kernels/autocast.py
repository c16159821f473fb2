"""An extension op under autocast (`autocast:`, parsed by
parse/transform_keys.py): its Autocast kernel for each device type its
policy names, for the op's TU, as ATen registers its own ops' (the
KERNEL_CPU/KERNEL_CUDA lines of ATen's autocast_mode.cpp).

Each kernel is ATen's own wrapper, `at::autocast::WrapFunction<policy,
device type, ...>::type::call`, from the installed ATen/autocast_mode.h:
it excludes the device's Autocast key, casts the arguments as the policy
says through `cached_cast` (the running autocast's lower-precision dtype;
float64 and non-floating tensors left alone; a leaf that requires grad
cast once per autocast region while the cache is on) and calls the op
again, which then runs its Autograd kernel on the cast inputs: their
gradients come back in the inputs' own dtypes through the casts.
fp32_append_dtype calls the op's overload that takes the dtype instead.

CPU's kernel is registered always; CUDA's where the extension's CUDA
kernels are built (emit/op_kernels/registration.py leaves it out with them).
"""

from __future__ import annotations

from ...model.extension_op import dispatcher_signature
from ...model.native import NativeFunction
from ...model.transforms import AUTOCAST_KEYS, FP32_APPEND_DTYPE, Autocast
from ...templates import load


def autocast_kernels(unit, autocast: Autocast) -> tuple[list[str], list[tuple[str, str]]]:
    """The wrappers (and what they redispatch to) for the op TU's anonymous
    namespace, and the (dispatch key, kernel) pairs they register."""
    f, stem = unit.func, unit.stem
    ret, types = dispatcher_signature(f)
    names = [a.name for a in f.func.schema_order_arguments()]
    signature = f"{ret}({', '.join(types)})"
    below = f"{stem}_below_autocast"
    lines = _redispatch(f, below, ret, types, f.func.name.overload, names,
                        "The op again, below the Autocast key that the wrapper excludes.")
    with_dtype = (below, signature)
    r = autocast.redispatch
    if r is not None:
        with_dtype = (f"{stem}_with_dtype", f"{r.ret}({', '.join(r.params)})")
        lines += [""] + _redispatch(f, with_dtype[0], r.ret, list(r.params), r.overload, names + [r.dtype],
                                    f"fp32_append_dtype's target: the overload '{r.overload}', with the dtype.")
    impls = []
    for device, policy in autocast.policies:
        name = f"{stem}_autocast_{device.lower()}"
        target = with_dtype if policy == FP32_APPEND_DTYPE else (below, signature)
        lines += [""] + load("autocast_wrapper.cpp").lines(
            op=_label(f), device=device, policy=policy, name=name, signature=signature,
            redispatch_signature=target[1], redispatch=target[0])
        impls.append((AUTOCAST_KEYS[device], f"{name}::call"))
    return lines, impls


def _label(f: NativeFunction) -> str:
    n = f.func.name
    return f"{f.namespace}::{n.name}" + (f".{n.overload}" if n.overload else "")


def _redispatch(f: NativeFunction, name: str, ret: str, types: list[str], overload: str, args: list[str],
                why: str) -> list[str]:
    """A function of signature `ret(types)` that calls the op's `overload`
    through the dispatcher (a typed handle looked up once)."""
    params = ", ".join(f"{t} {n}" for t, n in zip(types, args))
    lookup = load("op_lookup.cpp").lines(name=f"{f.namespace}::{f.func.name.name}", overload=overload,
                                         signature=f"{ret}({', '.join(types)})")
    return load("autocast_redispatch.cpp").lines(why=why, ret=ret, name=name, params=params, lookup=lookup,
                                                 args=", ".join(args))

