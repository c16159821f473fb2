"""extname's operator against the same computation in ATen ops: values,
gradients (gradcheck), torch.library.opcheck, torch.compile and forward AD
(the autograd: Python generated from derivatives.yaml)."""

import torch
from torch.autograd import forward_ad, gradcheck

import extname

op = torch.ops.extname.scaled_square
ALPHA = 1.5


def x(device="cpu"):
    return torch.randn(3, 4, dtype=torch.double, device=device, requires_grad=True)


def test_values_match_aten():
    a = x().detach()
    torch.testing.assert_close(op(a, ALPHA), ALPHA * a * a)
    assert extname.ops.scaled_square is op


def test_gradcheck():
    assert gradcheck(lambda a: op(a, ALPHA), (x(),))


def test_opcheck():
    torch.library.opcheck(op.default, (x(), ALPHA))


def test_torch_compile_forward_and_backward():
    compiled = torch.compile(lambda a: op(a, ALPHA), fullgraph=True, backend="aot_eager")
    a = x()
    eager, = torch.autograd.grad(op(a, ALPHA).sum(), a)
    out = compiled(a)
    got, = torch.autograd.grad(out.sum(), a)
    torch.testing.assert_close(out, op(a, ALPHA))
    torch.testing.assert_close(got, eager)


def test_forward_ad():
    a, t = torch.randn(3, 4, dtype=torch.double), torch.randn(3, 4, dtype=torch.double)
    with forward_ad.dual_level():
        out = op(forward_ad.make_dual(a, t), ALPHA)
        tangent = forward_ad.unpack_dual(out).tangent
    torch.testing.assert_close(tangent, 2 * ALPHA * a * t)
