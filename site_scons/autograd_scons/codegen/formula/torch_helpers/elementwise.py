"""Helpers of arithmetic, linear algebra, reductions and lists."""

from __future__ import annotations

import math

import torch

from .shapes import (_conj, _count, _dims, _dtype, _real_only, _wrap, handle_r_to_c, maybe_multiply,  # noqa: F401
                   mean_backward, unsqueeze_multiple)


# --- arithmetic ------------------------------------------------------------


def mul_tensor_backward(grad, other, self_like):
    return handle_r_to_c(self_like, grad * _conj(other))


def div_tensor_self_backward(grad, other, self_like, rounding_mode=None):
    if rounding_mode is not None:
        return torch.zeros_like(grad, dtype=_dtype(self_like))
    return handle_r_to_c(self_like, grad / _conj(other))


def div_tensor_other_backward(grad, self, other, rounding_mode=None):
    if rounding_mode is not None:
        return torch.zeros_like(grad, dtype=other.dtype)
    return handle_r_to_c(other, -grad * ((self / other) / other).conj())


def pow_backward(grad, self, exponent):
    """d(self^e)/dself for a number e."""
    if exponent == 0:
        return torch.zeros_like(self)
    return grad * (exponent * self.pow(exponent - 1)).conj()


def pow_backward_self(grad, self, exponent):
    zero = torch.zeros((), dtype=grad.dtype, device=grad.device)
    return torch.where(exponent == 0, zero, grad * (exponent * torch.pow(self, exponent - 1)).conj())


def pow_backward_exponent(grad, self, exponent, result):
    """d(self^e)/de = self^e * log(self); 0 where self is 0 and e >= 0."""
    _real_only(exponent, self if isinstance(self, torch.Tensor) else None)
    if not isinstance(self, torch.Tensor):   # a number to a tensor power
        out = grad * (result * torch.log(torch.as_tensor(self, dtype=result.dtype))).conj()
        if self == 0:
            out = torch.where(exponent >= 0, torch.zeros_like(out), out)
        return handle_r_to_c(exponent, out)
    base = self.to(result.dtype)
    zero = torch.zeros((), dtype=grad.dtype, device=grad.device)
    out = grad * torch.where((exponent >= 0) & (base == 0), zero, (result * base.log()).conj())
    return handle_r_to_c(exponent, out)


def clamp_backward(grad, self, min=None, max=None):
    zero = torch.zeros((), dtype=grad.dtype, device=grad.device)
    if min is not None and max is not None:
        return torch.where((self >= min).logical_and(self <= max), grad, zero)
    if min is not None:
        return torch.where(self >= min, grad, zero)
    if max is not None:
        return torch.where(self <= max, grad, zero)
    return grad


def clamp_backward_min_max(grad, self, min, max, mask):
    zero = torch.zeros((), dtype=grad.dtype, device=grad.device)
    grad_min = grad_max = None
    if min is not None and max is not None:
        if mask[0]:
            grad_min = torch.where((self < min).logical_and(min < max), grad, zero)
        if mask[1]:
            grad_max = torch.where((self > max).logical_or(max < min), grad, zero)
    elif min is not None and mask[0]:
        grad_min = torch.where(self < min, grad, zero)
    elif max is not None and mask[1]:
        grad_max = torch.where(self > max, grad, zero)
    return grad_min, grad_max


def atan2_backward(grad, self, other, mask):
    recip = (self * self + other * other).reciprocal()
    return (grad * other * recip if mask[0] else None, grad * -self * recip if mask[1] else None)


def deg2rad_backward(grad):
    return grad * (math.pi / 180.0)


def rad2deg_backward(grad):
    return grad * (180.0 / math.pi)


def log1p_backward(grad, self):
    return grad / (self + 1).conj()


def angle_backward(grad, self):
    _real_only(self)
    return torch.zeros_like(self)


def sgn_backward(x, gx, sgn):
    """sgn(z) = z/|z|: d/dz = 1/(2|z|), d/dz* = -sgn^2/(2|z|); 0 at 0 (and
    everywhere for a real input)."""
    if not x.is_complex():
        return torch.zeros_like(x)
    a = x.abs()
    return ((gx - (sgn * sgn) * gx.conj()) / (2.0 * a)).masked_fill(a == 0.0, 0.0)


def masked_fill_backward(grad, mask):
    return torch.where(mask, grad, 0).sum()


# --- linear algebra ----------------------------------------------------------


def mm_mat1_backward(grad, mat2, sizes, strides, layout, alpha):
    return maybe_multiply(grad.mm(mat2.t().conj()), _conj(alpha))


def mm_mat2_backward(grad, mat1, sizes, strides, layout, alpha):
    return maybe_multiply(mat1.t().conj().mm(grad), _conj(alpha))


# --- reductions -------------------------------------------------------------


def var_backward(grad, self, dims, correction, keepdim):
    """d var / d self = 2 (self - mean) / (N - correction)."""
    correction = 1 if correction is None else correction
    if self.dim() == 0:
        return grad * 0
    if not keepdim and self.dim() > 1:
        grad = unsqueeze_multiple(grad, dims, self.dim())
    n = _count(self.shape, dims, self.numel())
    return (2.0 / (n - correction)) * grad * (self - self.mean(_dims(dims, self.dim()), keepdim=True))


def std_backward(result, grad, self, dims, correction, keepdim):
    grad_var = (grad / (result * 2)).masked_fill(result == 0, 0)
    return var_backward(grad_var, self, dims, correction, keepdim)


def var_mean_backward(gvar, gmean, self, dims, correction, keepdim):
    out = None
    if gvar is not None:
        out = var_backward(gvar, self, dims, correction, keepdim)
    if gmean is not None:
        m = mean_backward(gmean, self.shape, dims, self.numel(), keepdim)
        out = m if out is None else out + m
    return out


def std_mean_backward(gstd, gmean, self, std, dims, correction, keepdim):
    out = None
    if gstd is not None:
        out = std_backward(std, gstd, self, dims, correction, keepdim)
    if gmean is not None:
        m = mean_backward(gmean, self.shape, dims, self.numel(), keepdim)
        out = m if out is None else out + m
    return out


def cumsum_backward(grad, dim):
    if grad.dim() == 0 or grad.numel() <= 1:
        return grad
    return grad.flip(dim).cumsum(dim).flip(dim)


# --- lists ------------------------------------------------------------------


def _zeros_for(grads, like_shapes, options):
    return [g if g is not None else torch.zeros(s, **options) for g, s in zip(grads, like_shapes)]


def split_with_sizes_backward(grads, split_sizes, dim, sizes, options):
    dim = _wrap(dim, len(sizes))
    shapes = [list(sizes[:dim]) + [s] + list(sizes[dim + 1:]) for s in split_sizes]
    return torch.cat(_zeros_for(grads, shapes, options), dim)


def split_backward(grads, split_size, dim, sizes, options):
    dim = _wrap(dim, len(sizes))
    total = sizes[dim]
    n = max(1, -(-total // split_size)) if split_size else 1
    split_sizes = [split_size] * n
    split_sizes[-1] = total - split_size * (n - 1)
    return split_with_sizes_backward(grads, split_sizes, dim, sizes, options)


def unbind_backward(grads, dim):
    like = next(g for g in grads if g is not None)
    return torch.stack([g if g is not None else torch.zeros_like(like) for g in grads], dim)


def cat_tensors_backward(grad, sizes, dtypes, dim):
    if not sizes:
        return []
    dim = _wrap(dim, grad.dim())
    out, start = [], 0
    for shape, dtype in zip(sizes, dtypes):
        if len(shape) == 1 and shape[0] == 0:   # an empty 1-d tensor cat skips
            out.append(torch.zeros(0, dtype=grad.dtype, device=grad.device))
            continue
        out.append(handle_r_to_c(dtype, grad.narrow(dim, start, shape[dim])))
        start += shape[dim]
    return out


def stack_tensors_backward(grad, dim, dtypes):
    return [handle_r_to_c(dt, g) for g, dt in zip(grad.unbind(dim), dtypes)]


def to_args_sizes(tensors):
    return [list(t.shape) for t in tensors]


to_args_sizes_symint = to_args_sizes


def to_args_scalartypes(tensors):
    return [t.dtype for t in tensors]


def index_backward(zeros, indices, grad):
    # (the op: Tensor.index_put takes no None among the indices)
    return torch.ops.aten.index_put(zeros, indices, grad, True)


def take_backward(grad, self, indices):
    return torch.zeros_like(self).put_(indices, grad, accumulate=True)


def strides_or_error(t, name):
    return t.stride() if t.layout == torch.strided else ()


def repeat_backward(grad, repeats, input_shape):
    lead = len(repeats) - len(input_shape)
    if lead > 0:
        grad = grad.sum(tuple(range(lead)))
    split = []
    for r, s in zip(repeats[lead:], input_shape):
        split += [r, s]
    grad = grad.reshape(split)
    return grad.sum(tuple(range(0, len(split), 2))) if split else grad
