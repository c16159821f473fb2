"""FunctionsManual's helpers in Python: the functions torch's formulas call
by name (`handle_r_to_c`, `sum_backward`, ...), each written from the math
of the derivative it serves, for the Python autograd the stable target
generates.  Needs only torch at run time: generated code imports it (or a
copy of it).  HELPERS names what it defines for the translator (name ->
the type of what it returns).

Complex inputs: where a helper's complex case is not written (or not
proved by the differential, which runs float64), it raises
NotImplementedError instead of guessing.
"""

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


_TENSOR = ("not_implemented not_implemented_list handle_r_to_c maybe_multiply sum_to unsqueeze_to unsqueeze_multiple "
           "restore_reduced_dims sum_backward nansum_backward mean_backward scale_grad_by_count "
           "evenly_distribute_backward permute_backwards logsumexp_backward mul_tensor_backward "
           "div_tensor_self_backward div_tensor_other_backward pow_backward pow_backward_self "
           "pow_backward_exponent clamp_backward deg2rad_backward rad2deg_backward log1p_backward "
           "angle_backward sgn_backward masked_fill_backward mm_mat1_backward mm_mat2_backward var_backward "
           "std_backward var_mean_backward std_mean_backward cumsum_backward split_with_sizes_backward "
           "split_backward unbind_backward index_backward take_backward repeat_backward").split()
HELPERS = {**{n: "Tensor" for n in _TENSOR}, "clamp_backward_min_max": "tuple", "atan2_backward": "tuple",
           "cat_tensors_backward": "Tensor[]", "stack_tensors_backward": "Tensor[]", "to_args_sizes": "int[][]",
           "to_args_sizes_symint": "int[][]", "to_args_scalartypes": "ScalarType[]", "strides_or_error": "int[]"}
