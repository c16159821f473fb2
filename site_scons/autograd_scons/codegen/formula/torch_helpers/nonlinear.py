"""Helpers of norms, products and the double backward of losses and
activations."""

from __future__ import annotations

import math

import torch

from .shapes import (_conj, _count, _dims, _dtype, _real_only, _wrap, handle_r_to_c, maybe_multiply,  # noqa: F401
                   mean_backward, unsqueeze_multiple)


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


# --- more, each proved by the differential ------------------------------------


def _to_copy_backward(grad, self_options):
    if grad.is_complex() and not self_options["dtype"].is_complex:
        grad = torch.real(grad)
    return grad.to(device=self_options["device"])


def polar_backward(grad, result):
    """z = r e^{i theta}: dz/dr = e^{i theta}, dz/dtheta = i z."""
    return torch.real(grad * result.sgn().conj()), torch.real(grad * (1j * result).conj())


def i1e_backward(grad, self, result):
    """(e^{-|x|} I1(x))' = i0e(x) - i1e(x) (sign(x) + 1/x); 1/2 at 0."""
    _real_only(self)
    d = torch.special.i0e(self) - result * (self.sgn() + self.reciprocal())
    return grad * torch.where(self == 0, 0.5, d)


def constant_pad_nd_backward(grad, pad):
    return torch.constant_pad_nd(grad, [-p for p in pad])


def block_diag_backward(grad, sizes, dtypes):
    out, row, col = [], 0, 0
    for shape, dtype in zip(sizes, dtypes):
        rows, cols = (1, 1) if len(shape) == 0 else (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])
        block = grad[row:row + rows, col:col + cols].reshape(shape)
        out.append(handle_r_to_c(dtype, block))
        row, col = row + rows, col + cols
    return out


def infinitely_differentiable_silu_backward(grad, self):
    s = self.sigmoid()
    return grad * s * (1 + self * (1 - s))


def infinitely_differentiable_mish_backward(grad, self):
    s, t = self.sigmoid(), torch.nn.functional.softplus(self).tanh()
    return grad * (t + self * s * (1 - t * t))


def infinitely_differentiable_logit_backward(grad, self, eps):
    d = grad / (self * (1 - self))
    if eps is not None:
        return torch.where((self < eps) | (self > 1 - eps), torch.zeros_like(d), d)
    return torch.where((self < 0) | (self > 1), torch.full_like(d, math.nan), d)


def infinitely_differentiable_native_dropout_backward(grad, mask, scale):
    return grad * mask * scale


def cholesky_backward(gL, upper, L):
    """A = L L^H: gA = L^{-H} Phi(L^H gL) L^{-1}, Phi the lower triangle with
    its diagonal halved, then made Hermitian."""
    if upper:
        L, gL = L.mH, gL.mH
    phi = (L.mH @ gL).tril()
    phi = phi - 0.5 * torch.diag_embed(phi.diagonal(dim1=-2, dim2=-1))
    gA = torch.linalg.solve_triangular(L.mH, phi, upper=True)
    gA = torch.linalg.solve_triangular(L, gA, upper=False, left=False)
    return 0.5 * (gA + gA.mH)
