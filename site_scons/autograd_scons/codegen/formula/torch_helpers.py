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


# --- norms, products ----------------------------------------------------------


def norm_backward(grad, self, p, norm, dims=None, keepdim=False):
    """d ||x||_p / dx, by cases of p; dims None: every dimension."""
    _real_only(self)
    p = 2.0 if p is None else float(p)
    if dims is not None and not keepdim and self.dim() != 0 and norm.dim() != self.dim():
        grad = unsqueeze_multiple(grad, dims, self.dim())
        norm = unsqueeze_multiple(norm, dims, self.dim())
    if p == 0.0:
        return torch.zeros_like(self)
    if p == 1.0:
        return self.sgn() * grad
    if p == 2.0:
        return grad * (self / norm).masked_fill(norm == 0, 0)
    if math.isinf(p):
        mask = self.abs() == norm   # the gradient shared among the extremes
        count = mask.sum(_dims(dims, self.dim()), keepdim=True) if dims is not None else mask.sum()
        return self.sgn() * ((grad / count) * mask)
    if p < 1.0:
        return (self.sgn() * self.abs().pow(p - 1) * grad / norm.pow(p - 1)).masked_fill(self == 0, 0)
    return (self * self.abs().pow(p - 2) * grad / norm.pow(p - 1)).masked_fill(norm == 0, 0)


def linalg_vector_norm_backward(grad, self, ord, norm, dims, keepdim):
    return norm_backward(grad, self, ord, norm, list(range(self.dim())) if dims is None else dims, keepdim)


def _exclusive_cumprod(x, dim):
    ones = torch.ones_like(x.narrow(dim, 0, 1))
    return torch.cat([ones, x.narrow(dim, 0, x.shape[dim] - 1)], dim).cumprod(dim)


def prod_backward(grad, input, result, dim=None, keepdim=False):
    """d prod / dx_j = the product of the others (zeros included), as the
    product of the exclusive cumulative products from both ends."""
    _real_only(input)
    if input.dim() == 0 or input.numel() == 0:
        return grad.expand_as(input) if input.numel() else torch.zeros_like(input)
    if dim is None:
        flat = input.flatten()
        others = _exclusive_cumprod(flat, 0) * _exclusive_cumprod(flat.flip(0), 0).flip(0)
        return (grad * others).reshape(input.shape)
    if not keepdim:
        grad = grad.unsqueeze(dim)
    others = _exclusive_cumprod(input, dim) * _exclusive_cumprod(input.flip(dim), dim).flip(dim)
    return grad * others


def copysign_tensor_self_backward(grad, self, result):
    return grad * (result / self).masked_fill(self == 0, 0)


def logcumsumexp_backward(grad, self, result, dim):
    """d r_i / d x_j = exp(x_j - r_i) for j <= i: the sum over i >= j in
    log space, the positive and the negative parts of grad apart (exp of
    -r_i alone overflows)."""
    _real_only(self)
    if self.dim() == 0 or self.numel() == 0:
        return grad
    ninf = torch.full_like(result, -math.inf)

    def part(g):
        w = torch.where(g > 0, g.abs().log() - result, ninf)
        return (self + w.flip(dim).logcumsumexp(dim).flip(dim)).exp()
    return part(grad) - part(-grad)


def sinc_backward(grad, self):
    _real_only(self)
    px = self * math.pi
    d = (px.cos() * px - px.sin()) / (self * px)
    return torch.where(self == 0, torch.zeros_like(d), grad * d)


def i1_backward(grad, self, result):
    _real_only(self)
    return grad * torch.where(self == 0, 0.5, torch.special.i0(self) - result / self)


def mvlgamma_backward(grad, self, p):
    return grad * sum(torch.digamma(self - j / 2) for j in range(p))


def max_pool_double_backward(grad, indices, dim):
    """The gradient gathered at the pooled positions."""
    return grad.flatten(-dim).gather(-1, indices.flatten(-dim)).view(indices.shape)


def slice_backward_wrapper(grad, sizes, dim, start, end, step):
    size = sizes[_wrap(dim, len(sizes))]
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else end)
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return torch.ops.aten.slice_backward(grad, sizes, dim, start, end, step)


# --- double backward of losses and activations -------------------------------


def _reduced(t, input, reduction):
    return t / input.numel() if reduction == 1 else t


def mse_loss_double_backward(grad, input, reduction):
    return _reduced(2 * grad, input, reduction)


def smooth_l1_loss_double_backward(grad, input, target, reduction, beta):
    if beta == 0:
        return torch.zeros_like(grad)
    return _reduced(grad * ((input - target).abs() < beta) / beta, input, reduction)


def huber_loss_double_backward(grad, input, target, reduction, delta):
    return _reduced(torch.where((input - target).abs() < delta, grad, 0), input, reduction)


def log_sigmoid_double_backward(grad, input):
    z = input.sigmoid()
    return grad * (z - 1) * z


def softplus_double_backward(grad, input, beta, threshold):
    z = (input * beta).sigmoid()
    return grad * beta * z * (1 - z) * ((input * beta) <= threshold)


def softmax_double_backward(grad, grad_output, dim, output):
    """softmax_backward(go, y) = y (go - sum(go y)): its derivative in y."""
    return grad * (grad_output - (grad_output * output).sum(dim, keepdim=True)) \
        - grad_output * (grad * output).sum(dim, keepdim=True)


def gelu_double_backward(grad, grad_output, input, approximate):
    """gelu'' = phi(x) (2 - x^2) exactly; with tanh, for g = x (1 + t) / 2,
    t = tanh(u), u = k (x + c x^3): g'' = (1 - t^2) (u' + x (u'' - 2 t u'^2) / 2)."""
    if approximate == "none":
        phi = torch.exp(-0.5 * input * input) / math.sqrt(2 * math.pi)
        return grad * grad_output * phi * (2 - input * input)
    k, c = math.sqrt(2 / math.pi), 0.044715
    t = torch.tanh(k * (input + c * input ** 3))
    du, d2u = k * (1 + 3 * c * input * input), k * 6 * c * input
    return grad * grad_output * (1 - t * t) * (du + 0.5 * input * (d2u - 2 * t * du * du))


def elu_double_backward(grad, grad_output, alpha, scale, input_scale, is_result, self_or_result):
    neg = self_or_result <= 0
    if is_result:
        return torch.where(neg, grad * grad_output * input_scale, 0)
    return torch.where(neg, grad * grad_output * scale * alpha * input_scale * input_scale
                       * (self_or_result * input_scale).exp(), 0)


_TENSOR = ("not_implemented not_implemented_list handle_r_to_c maybe_multiply sum_to unsqueeze_to unsqueeze_multiple "
           "restore_reduced_dims sum_backward nansum_backward mean_backward scale_grad_by_count "
           "evenly_distribute_backward permute_backwards logsumexp_backward mul_tensor_backward "
           "div_tensor_self_backward div_tensor_other_backward pow_backward pow_backward_self "
           "pow_backward_exponent clamp_backward deg2rad_backward rad2deg_backward log1p_backward "
           "angle_backward sgn_backward masked_fill_backward mm_mat1_backward mm_mat2_backward var_backward "
           "std_backward var_mean_backward std_mean_backward cumsum_backward split_with_sizes_backward "
           "split_backward unbind_backward index_backward take_backward repeat_backward norm_backward "
           "linalg_vector_norm_backward prod_backward copysign_tensor_self_backward logcumsumexp_backward "
           "sinc_backward i1_backward mvlgamma_backward max_pool_double_backward slice_backward_wrapper "
           "mse_loss_double_backward smooth_l1_loss_double_backward huber_loss_double_backward "
           "log_sigmoid_double_backward softplus_double_backward softmax_double_backward gelu_double_backward "
           "elu_double_backward").split()
HELPERS = {**{n: "Tensor" for n in _TENSOR}, "clamp_backward_min_max": "tuple", "atan2_backward": "tuple",
           "cat_tensors_backward": "Tensor[]", "stack_tensors_backward": "Tensor[]", "to_args_sizes": "int[][]",
           "to_args_sizes_symint": "int[][]", "to_args_scalartypes": "ScalarType[]", "strides_or_error": "int[]"}
