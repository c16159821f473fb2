"""The helpers' shared pieces, the refusals, and the helpers of types and
shapes (sum_to, unsqueeze_to, the reductions' backward)."""

from __future__ import annotations

import math

import torch


def _dtype(x) -> torch.dtype:
    return x if isinstance(x, torch.dtype) else x.dtype


def _wrap(d: int, n: int) -> int:
    return d + n if d < 0 else d


def _dims(dims, n: int) -> list:
    """Reduced dimensions, wrapped and sorted; None or [] means all."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(n))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(_wrap(d, max(n, 1)) for d in dims)


def _conj(x):
    """conj of a Tensor or a number (a Scalar argument)."""
    return x.conj() if isinstance(x, torch.Tensor) else x.conjugate()


def _real_only(*ts):
    if any(isinstance(t, torch.Tensor) and t.is_complex() for t in ts):
        raise NotImplementedError("this helper's complex case is not written in Python")


# --- refusals ---------------------------------------------------------------


def not_implemented(name, reason=""):
    raise NotImplementedError(f"the derivative for '{name}' is not implemented. {reason}".strip())


def not_implemented_list(name, reason=""):
    not_implemented(name, reason)


# --- types and shapes ------------------------------------------------------


def handle_r_to_c(like, grad):
    """The gradient of a real input is the real part of a complex one."""
    if grad is None or _dtype(like).is_complex or not grad.is_complex():
        return grad
    return torch.real(grad)


def maybe_multiply(t, s):
    """t * s, skipping the multiplication by one."""
    if isinstance(s, bool) or (not isinstance(s, complex) and s == 1):
        return t
    return t * s


def sum_to(t, shape):
    """t summed down to `shape` (the inverse of broadcasting t to it)."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    lead = t.dim() - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and t.shape[lead + i] != 1]
    if dims:   # one reduction, as the engine's: the same sums, bit for bit
        t = t.sum(dims, keepdim=True)
    return t.reshape(shape) if lead > 0 else t


def unsqueeze_to(t, *args):
    """t with the dimensions of size 1 that a squeeze removed put back:
    (t, sizes), (t, dim, sizes) or (t, dims, sizes)."""
    sizes = list(args[-1])
    if len(args) == 1:
        for i, s in enumerate(sizes):
            if s == 1:
                t = t.unsqueeze(i)
        return t
    for d in _dims(args[0], len(sizes)) if not isinstance(args[0], int) else [_wrap(args[0], max(len(sizes), 1))]:
        if len(sizes) and sizes[d] == 1:
            t = t.unsqueeze(d)
    return t


def unsqueeze_multiple(t, dims, n_dims):
    for d in _dims(dims, n_dims):
        t = t.unsqueeze(d)
    return t


def restore_reduced_dims(output, dims, keepdim):
    if keepdim:
        return output
    return unsqueeze_multiple(output, dims, output.dim() + (len(dims) if dims else 0))


def sum_backward(grad, sizes, dims, keepdim):
    if not keepdim and len(sizes) > 0:
        grad = unsqueeze_multiple(grad, dims, len(sizes))
    return grad.expand(sizes)


def nansum_backward(grad, self, dims, keepdim):
    return sum_backward(grad, self.shape, dims, keepdim) * self.isnan().logical_not()


def _count(sizes, dims, numel) -> int:
    if dims is None or len(dims) == 0 or len(sizes) == 0:
        return numel
    return math.prod(sizes[d] for d in _dims(dims, len(sizes)))


def mean_backward(grad, sizes, dims, numel, keepdim):
    return sum_backward(grad, sizes, dims, keepdim) / _count(sizes, dims, numel)


def scale_grad_by_count(grad, mask, dims):
    return (grad / mask.sum(dims, keepdim=True)) * mask


def evenly_distribute_backward(grad, input, value):
    """The gradient of a selected value shared among the inputs equal to it."""
    mask = input.isnan() if bool(value.isnan()) else input == value
    return mask * (grad / mask.sum())


def permute_backwards(grad, dims):
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[_wrap(d, n)] = i
    return grad.permute(inverse)


def logsumexp_backward(grad, self, result, dims, keepdim):
    if not keepdim and self.dim() != 0:
        grad = unsqueeze_multiple(grad, dims, self.dim())
        result = unsqueeze_multiple(result, dims, self.dim())
    return grad * (self - result).exp().conj()
