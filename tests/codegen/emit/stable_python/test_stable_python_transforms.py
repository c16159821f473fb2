"""The generated module's other registrations at run time: fake kernels
(`fake:`), autocast and vmap (the C++ target's policies and rule kinds),
and what torch's own checks of a custom op say of them: opcheck's four
tests and torch.compile(fullgraph=True), forward and backward."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.func import vmap  # noqa: E402

D = dict(dtype=torch.double)


@pytest.mark.compile   # ~1.7 s: the first FakeTensorMode
def test_fake_kernels_follow_the_yaml(sp):
    with FakeTensorMode():
        x, y = torch.empty(4, 3), torch.empty(3, dtype=torch.double)
        assert sp.bmul(x, y).shape == (4, 3) and sp.bmul(x, y).dtype == torch.double   # pointwise (from vmap:)
        assert sp.scaled(x).shape == (4, 3)                                             # {like: self}
        assert sp.row_sum(x).shape == (4,)                                              # {python: ...}
        assert sp.gather_rows(x, torch.empty(5, dtype=torch.long)).shape == (5, 3)
        assert [o.shape for o in sp.sincos_sign(x)] == [(4, 3)] * 3


def test_autocast_policies(sp):
    x, y = torch.randn(3), torch.randn(3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert sp.affine(x, y).dtype == torch.bfloat16                  # lower_precision_fp
        assert sp.myexp(x.bfloat16()).dtype == torch.float32            # fp32 (register_autocast)
        assert sp.bmul(x, y.bfloat16()).dtype == torch.float32          # promote
        assert sp.scaled(x).dtype == torch.float32                      # none: as it is
        assert sp.sum_dtype(x.bfloat16()).dtype == torch.float32        # fp32_set_opt_dtype
        assert sp.sum_dtype(x.bfloat16(), torch.float64).dtype == torch.float64
    assert sp.sum_dtype(x.bfloat16()).dtype == torch.bfloat16
    assert sp.affine(x, y).dtype == torch.float32


def test_vmap_kinds_match_a_loop(sp):
    xs, y = torch.randn(5, 4, 3, **D), torch.randn(3, **D)
    assert torch.allclose(vmap(sp.bmul, in_dims=(0, None))(xs, y), xs * y)               # pointwise, broadcast
    assert torch.allclose(vmap(sp.bmul, in_dims=(1, None))(xs, y), xs.movedim(1, 0) * y)
    assert torch.allclose(vmap(sp.row_sum)(xs), xs.sum(-1))                              # leading_dims
    assert torch.allclose(vmap(lambda v: sp.soft_clip(v, beta=0.5))(xs), (xs / 0.5).tanh() * 0.5)
    sin, cos, sign = vmap(sp.sincos_sign)(xs)
    assert torch.allclose(cos, xs.cos()) and torch.equal(sign, xs.sign())


@pytest.mark.compile   # opcheck's aot_dispatch test traces each op (~0.5 s each)
@pytest.mark.parametrize("name, args", [
    ("bmul", lambda: (torch.randn(4, 3, requires_grad=True), torch.randn(4, 3, requires_grad=True))),
    ("scaled", lambda: (torch.randn(3, requires_grad=True), 0.5)),
    ("affine", lambda: (torch.randn(4, 3, requires_grad=True), torch.randn(3, requires_grad=True),
                        torch.randn(3, requires_grad=True))),
    ("row_sum", lambda: (torch.randn(4, 3, requires_grad=True),)),
    ("myexp", lambda: (torch.randn(3, requires_grad=True),)),
    ("sincos_sign", lambda: (torch.randn(3, requires_grad=True),)),
    ("gather_rows", lambda: (torch.randn(4, 3, requires_grad=True), torch.tensor([0, 3]))),
    ("masked_scale", lambda: (torch.randn(3, requires_grad=True), torch.randn(3))),
    ("prod_diff", lambda: (torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True))),
    ("sum_dtype", lambda: (torch.randn(4, 3, requires_grad=True),)),
])
def test_opcheck(sp, name, args):
    torch.library.opcheck(getattr(sp, name).default, args())


@pytest.mark.compile
def test_opcheck_keyword_only(sp):
    torch.library.opcheck(sp.soft_clip.default, (torch.randn(3, requires_grad=True),), {"beta": 0.5})


@pytest.mark.compile   # torch.compile: seconds
def test_compile_fullgraph_forward_and_backward(sp):
    def f(x, w, b):
        return (sp.affine(sp.myexp(x), w, b) * sp.row_sum(sp.bmul(x, x)).unsqueeze(-1)).sum()
    args = [torch.randn(4, 3, **D, requires_grad=True), torch.randn(3, **D, requires_grad=True),
            torch.randn(3, **D, requires_grad=True)]
    expected = torch.autograd.grad(f(*args), args)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    got = torch.autograd.grad(compiled(*args), args)
    assert all(torch.allclose(a, b) for a, b in zip(got, expected))


@pytest.mark.compile   # torch.compile: seconds
def test_compiled_forward_ad_keeps_the_tangent(sp):
    """AOT traces forward-AD code with the dual level closed and its inputs
    still dual: a fast path that skipped the Function there (no level open,
    nothing requiring grad) gave a None tangent, silently."""
    from torch.autograd import forward_ad

    def f(x, t):
        with forward_ad.dual_level():
            return forward_ad.unpack_dual(sp.myexp(forward_ad.make_dual(x, t))).tangent

    def g(x, t):
        return torch.func.jvp(sp.bmul, (x, x), (t, t))[1]
    x, t = torch.randn(3), torch.randn(3)
    got = torch.compile(f, backend="aot_eager")(x, t)
    assert got is not None and torch.allclose(got, t * x.exp())
    assert torch.allclose(torch.compile(g, fullgraph=True, backend="aot_eager")(x, t), 2 * t * x)
