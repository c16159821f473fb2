"""Run-time support of the autograd that autograd_scons generates as Python
for the ops of a stable-ABI extension (the module beside this file).  It
needs torch alone, and is copied as it is next to every generated module.

torch registers no forward formula for an op (register_autograd's kernel
drops tangents), so each op gets a Python kernel at its Autograd key that
applies a single-level autograd Function with forward, setup_context,
backward and jvp; its forward calls the op again below autograd.  Under
torch.func's transforms the Function is allowed as functorch allows its
own single-level Functions, and its forward runs with both gradient modes
on, as functorch's do.  A transform that cannot carry the formulas
(forward-over-forward) is refused in one line instead of giving zeros.

Private APIs this rests on (checked on torch 2.13.0 and 2.14.1):
_SingleLevelFunction, _C._after_autograd_keyset,
_C._AutoDispatchBelowAutograd, _C._are_functorch_transforms_active,
_C._functorch.{get,set}_single_level_autograd_function_allowed.
"""

from __future__ import annotations

import torch
from torch import _C
from torch.autograd import forward_ad
from torch.autograd.function import _SingleLevelFunction

_AFTER_AUTOGRAD = _C._after_autograd_keyset
_PYTHON = _C.DispatchKey.Python
_transforms_active = _C._are_functorch_transforms_active
_functorch = _C._functorch


class OpFunction(_SingleLevelFunction):
    """The base of every generated op's Function: `op` is its OpOverload,
    `label` what messages call it."""
    op = None
    label = ""


def redispatch(op, keyset, args, kwargs):
    """The op below autograd (its kernels, or a transform below us)."""
    if _transforms_active():
        # functorch's own single-level Functions run their forward so: the
        # transforms below ours record on what the call returns.
        with torch.enable_grad(), forward_ad._set_fwd_grad_enabled(True), _C._AutoDispatchBelowAutograd():
            return op.redispatch(keyset & _AFTER_AUTOGRAD, *args, **kwargs)
    with _C._AutoDispatchBelowAutograd():
        return op.redispatch(keyset & _AFTER_AUTOGRAD, *args, **kwargs)


def apply(function, keyset, args, kwargs):
    """The Autograd kernel's body: `args` every argument in schema order
    (the Function's inputs), `kwargs` the keyword-only ones again, for the
    redispatch when nothing is differentiated."""
    if _transforms_active():
        _refuse_forward_over_forward(function)
        allowed = _functorch.get_single_level_autograd_function_allowed()
        _functorch.set_single_level_autograd_function_allowed(True)
        try:
            return function.apply(*args, keyset)
        finally:
            _functorch.set_single_level_autograd_function_allowed(allowed)
    if (_C.is_grad_enabled() and _C._any_requires_grad(*args)) or forward_ad._current_level >= 0 \
            or keyset.has(_PYTHON):
        return function.apply(*args, keyset)
    # Nothing to record and no dual level: the op alone (what
    # register_autograd's kernel does too).  Not while a tensor subclass or
    # mode traces (the Python key: torch.compile's AOT trace of forward-AD
    # code runs with the dual level closed, its inputs still dual).
    with _C._AutoDispatchBelowAutograd():
        if kwargs:
            return function.op.redispatch(keyset & _AFTER_AUTOGRAD, *args[:len(args) - len(kwargs)], **kwargs)
        return function.op.redispatch(keyset & _AFTER_AUTOGRAD, *args)


def _refuse_forward_over_forward(function):
    """Two forward-mode levels (jacfwd(jacfwd(f)), jvp of jvp): the formula
    runs at the inner one only, so the outer tangent would be silently zero."""
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters
    from torch._C._functorch import TransformType
    jvps = sum(1 for i in retrieve_all_functorch_interpreters() if i.key() == TransformType.Jvp)
    if jvps > 1:
        raise RuntimeError(
            f"{function.label}: forward-mode AD over forward-mode AD (jacfwd of jacfwd, jvp of jvp) is not "
            f"supported by the generated Python autograd of a stable-ABI op: its tangent formula runs at one "
            f"level only, so the outer tangent would be zero; use jacfwd(jacrev(f)) or jacrev(jacfwd(f)) instead")


def no_forward_formula(function, why):
    """What a Function without a formula for some output does under forward AD."""
    raise RuntimeError(
        f"Trying to use forward AD with {function.label} that does not support it: {why} "
        f"(a dual tensor or torch.func.jvp/jacfwd reached it)")


def zeros_or(tangent, primal):
    """An input's tangent, zeros where it has none (what ATen's formulas see)."""
    if tangent is None and isinstance(primal, torch.Tensor):
        return torch.zeros_like(primal)
    return tangent


def function(dotted):
    """The Python function `module.name` that the yaml names (a fake kernel, a batch rule)."""
    import importlib
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def no_formula(label, op, keyset, args, kwargs):
    """The Autograd kernel of an op without a derivatives entry: it refuses
    inputs that require grad or carry a tangent (a result cut off from the
    graph would be a silent zero gradient), else runs the op (also under
    vmap alone)."""
    if (_C.is_grad_enabled() and _C._any_requires_grad(*args)) or _any_tangent(args):
        raise RuntimeError(f"{label}: the op has no derivative formula (derivatives.yaml has no entry for it), "
                           f"but an input requires grad or carries a tangent")
    with _C._AutoDispatchBelowAutograd():
        return op.redispatch(keyset & _AFTER_AUTOGRAD, *args[:len(args) - len(kwargs)], **kwargs)


def _any_tangent(args):
    if forward_ad._current_level < 0:
        return False
    return any(isinstance(a, torch.Tensor) and forward_ad.unpack_dual(a).tangent is not None for a in args)


# ------------------------------------------------------------- fake tensors


def broadcast_like(tensors, n_outputs):
    """The outputs of a pointwise op: the inputs' broadcast shape, their promoted dtype."""
    present = [t for t in tensors if t is not None]
    shape = torch.broadcast_shapes(*(t.shape for t in present))
    dtype = present[0].dtype
    for t in present[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    out = tuple(present[0].new_empty(shape, dtype=dtype) for _ in range(n_outputs))
    return out[0] if n_outputs == 1 else out


def like(t, n_outputs):
    out = tuple(torch.empty_like(t) for _ in range(n_outputs))
    return out[0] if n_outputs == 1 else out


# ------------------------------------------------------------------ autocast


def _eligible(t, device):
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.device.type == device \
        and t.dtype is not torch.float64


def _with_dtype_set(op, name, args, kwargs):
    """(args, kwargs) with the argument `name` float32 where it is None (or
    was left out: the dispatcher drops trailing defaults)."""
    schema = op._schema.arguments
    i = next(k for k, a in enumerate(schema) if a.name == name)
    if schema[i].kwarg_only:
        return args, {**kwargs, name: torch.float32} if kwargs.get(name) is None else kwargs
    if i < len(args):
        return (args if args[i] is not None else args[:i] + (torch.float32,) + args[i + 1:]), kwargs
    filled = tuple(args) + tuple(a.default_value for a in schema[len(args):i])
    return filled + (torch.float32,), kwargs


def autocast_kernel(op, device, policy, dtype_arg=None, with_dtype=None):
    """ATen's cast policies (autocast_mode.h) for a Python Autocast kernel:
    lower_precision_fp (the running autocast dtype), fp32, promote (the
    widest floating input), fp32_set_opt_dtype (the dtype argument set to
    float32 when unset and an input is eligible), fp32_append_dtype (the
    overload `with_dtype`, given float32)."""
    key = _C.DispatchKeySet(getattr(_C.DispatchKey, "Autocast" + _C._dispatch_key_for_device(device)))

    def cast(args, dtype):
        return [a.to(dtype) if _eligible(a, device) else a for a in args]

    def kernel(*args, **kwargs):
        if policy == "fp32_set_opt_dtype":
            with _C._ExcludeDispatchKeyGuard(key):
                eligible = any(_eligible(a, device) for a in args)
                a, k = _with_dtype_set(op, dtype_arg, args, kwargs) if eligible else (args, kwargs)
                return op(*a, **k)
        with _C._ExcludeDispatchKeyGuard(key):
            if policy == "lower_precision_fp":
                return op(*cast(args, torch.get_autocast_dtype(device)), **kwargs)
            if policy == "fp32":
                return op(*cast(args, torch.float32), **kwargs)
            if policy == "promote":
                floats = [a.dtype for a in args if _eligible(a, device)]
                widest = floats[0] if floats else None
                for d in floats[1:]:
                    widest = torch.promote_types(widest, d)
                return op(*(cast(args, widest) if widest is not None else args), **kwargs)
            eligible = any(_eligible(a, device) for a in args)
            if policy == "fp32_append_dtype":
                return with_dtype(*args, torch.float32, **kwargs) if eligible else op(*args, **kwargs)
            raise AssertionError(f"unknown autocast policy {policy!r}")
    return kernel


# ---------------------------------------------------------------------- vmap


def pointwise_rule(op, n_outputs):
    """`vmap: pointwise`: each batched tensor's batch dimension first, padded
    to the largest logical rank; unbatched tensors broadcast as they are."""
    def rule(info, in_dims, *args, **kwargs):
        rank = max((a.dim() - (d is not None) for a, d in zip(args, in_dims) if isinstance(a, torch.Tensor)),
                   default=0)
        moved = []
        for a, d in zip(args, in_dims):
            if isinstance(a, torch.Tensor) and d is not None:
                a = a.movedim(d, 0)
                a = a.reshape(a.shape[:1] + (1,) * (rank - a.dim() + 1) + a.shape[1:])
            moved.append(a)
        out = op(*moved, **kwargs)
        return out, (0,) * n_outputs if n_outputs > 1 else 0
    return rule


def leading_dims_rule(op, n_outputs):
    """`vmap: leading_dims`: a kernel that batches over the leading dimensions:
    each tensor's batch dimension first, an unbatched one expanded to it."""
    def rule(info, in_dims, *args, **kwargs):
        moved = []
        for a, d in zip(args, in_dims):
            if isinstance(a, torch.Tensor):
                a = a.movedim(d, 0) if d is not None else a.expand((info.batch_size,) + a.shape)
            moved.append(a)
        out = op(*moved, **kwargs)
        return out, (0,) * n_outputs if n_outputs > 1 else 0
    return rule


def autocast(lib, qualname, op, device, policy, dtype_arg=None, with_dtype=None):
    """Registers `policy` for `device` ("cpu", "cuda") where torch has that
    autocast: fp32 through torch.library.register_autocast (a fixed dtype is
    what it casts to), the others as a kernel of the Autocast key."""
    if not _C._is_autocast_available(device):
        return
    if policy == "fp32":
        torch.library.register_autocast(qualname, device, torch.float32, lib=lib)
        return
    lib.impl(qualname.split("::", 1)[1], autocast_kernel(op, device, policy, dtype_arg, with_dtype),
             "Autocast" + _C._dispatch_key_for_device(device))
