"""The generated Python autograd at run time, on the fixture's ops (defined
with torch.library, conftest.py): gradients, double backward, forward AD
by every route (and refused where no formula carries it), what is saved."""

from __future__ import annotations

import pytest

# (the generated autograd run under torch: the full tier; the fast tier keeps the emitted
# text's tests, test_stable_python_emit.py and test_stable_python_own_helpers.py)
pytestmark = pytest.mark.compile

torch = pytest.importorskip("torch")
from torch.autograd import forward_ad, gradcheck, gradgradcheck  # noqa: E402
from torch.func import hessian, jacfwd, jacrev, jvp, vmap  # noqa: E402

D = dict(dtype=torch.double)


def _cases(sp):
    torch.manual_seed(0)
    x = torch.randn(4, 3, **D, requires_grad=True)
    y = torch.randn(4, 3, **D, requires_grad=True)
    w = torch.randn(3, **D, requires_grad=True)
    b = torch.randn(3, **D, requires_grad=True)
    return {"bmul": (sp.bmul, (x, y)), "bmul_broadcast": (sp.bmul, (x, w)), "scaled": (sp.scaled, (x, 0.5)), "affine": (sp.affine, (x, w, b)),
            "affine_no_bias": (sp.affine, (x, w)), "row_sum": (sp.row_sum, (x,)), "myexp": (sp.myexp, (x,)),
            "sincos_sign": (lambda v: sp.sincos_sign(v)[:2], (x,)),
            "gather_rows": (sp.gather_rows, (x, torch.tensor([0, 2, 2]))),
            "masked_scale": (sp.masked_scale, (x, y.detach())), "prod_diff": (sp.prod_diff, (x, y)),
            "diff_only": (lambda a, c: sp.prod_diff(a, c)[1], (x, y)), "sum_dtype": (sp.sum_dtype, (x,)),
            "sum_dtype_float64": (lambda v: sp.sum_dtype(v, torch.float64), (x,)),
            "soft_clip": (lambda v: sp.soft_clip(v, beta=0.5), (x,)), "soft_clip_default": (sp.soft_clip, (x,)),
            # formulas calling the fixture's own helpers (sp_helpers.py)
            "wmul": (sp.wmul, (x, y)), "wmul_broadcast": (sp.wmul, (x, w))}


NAMES = ["bmul", "bmul_broadcast", "scaled", "affine", "affine_no_bias", "row_sum", "myexp", "sincos_sign", "gather_rows",
         "masked_scale", "prod_diff", "diff_only", "sum_dtype", "sum_dtype_float64",
         "soft_clip", "soft_clip_default", "wmul", "wmul_broadcast"]
FORWARD = [n for n in NAMES if n != "gather_rows"]


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_and_double_backward(sp, name):
    f, args = _cases(sp)[name]
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


@pytest.mark.parametrize("name", FORWARD)
def test_forward_ad_gives_the_formulas_tangent(sp, name):
    f, args = _cases(sp)[name]
    assert gradcheck(f, args, check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False,
                     check_batched_grad=False)


def test_jvp_jacfwd_and_dual_tensors_are_not_zero(sp):
    """What register_autograd alone gets wrong (the next test): every route
    of forward AD sees the formula's tangent, also outside grad mode."""
    x, y, t = torch.randn(3, **D), torch.randn(3, **D), torch.randn(3, **D)
    assert torch.allclose(jvp(sp.bmul, (x, y), (t, t))[1], t * y + x * t)
    assert torch.allclose(jacfwd(sp.myexp)(x), torch.diag(x.exp()))
    assert torch.allclose(jacfwd(sp.row_sum)(x), torch.ones(3, **D))
    with torch.no_grad(), forward_ad.dual_level():
        out = sp.myexp(forward_ad.make_dual(x, t))
        assert torch.allclose(forward_ad.unpack_dual(out).tangent, t * x.exp())


def test_the_formulas_own_helpers_give_the_gradient_and_the_tangent(sp):
    """wmul's formulas call sp_helpers.py (python_helpers=): its copy beside
    the generated module computes them."""
    x, w, t, u = torch.randn(4, 3, **D), torch.randn(3, **D), torch.randn(4, 3, **D), torch.randn(3, **D)
    assert torch.allclose(jvp(sp.wmul, (x, w), (t, u))[1], t * w + x * u)
    x.requires_grad_()
    w.requires_grad_()
    gx, gw = torch.autograd.grad(sp.wmul(x, w).sum(), (x, w))
    assert torch.allclose(gx, w.expand(4, 3)) and torch.allclose(gw, x.sum(0))


def test_register_autograd_alone_gives_silently_zero_tangents():
    """The defect the generated rule fixes (issue 59): the same op with the
    hand-written backward through torch.library.register_autograd returns
    zero tangents from jvp, without a word.  Were the generated module to
    register through register_autograd, the test above would fail so."""
    lib = torch.library.Library("sp_register_autograd", "DEF")
    lib.define("myexp(Tensor self) -> Tensor")
    lib.impl("myexp", lambda s: s.exp(), "CPU")
    op = torch.ops.sp_register_autograd.myexp.default
    torch.library.register_autograd(op, lambda ctx, g: g * ctx.saved_tensors[0],
                                    setup_context=lambda ctx, inputs, output: ctx.save_for_backward(output), lib=lib)
    x, t = torch.randn(3, **D), torch.ones(3, **D)
    assert torch.count_nonzero(jvp(op, (x,), (t,))[1]) == 0
    assert torch.count_nonzero(jacfwd(op)(x)) == 0


@pytest.mark.compile   # ~2 s: functorch's first hessian
def test_reverse_over_forward_and_vmap_of_grad(sp):
    x = torch.randn(3, **D)
    assert torch.allclose(hessian(lambda v: sp.myexp(v).sum())(x), torch.diag(x.exp()))
    assert torch.allclose(jacrev(jacrev(lambda v: sp.myexp(v).sum()))(x), torch.diag(x.exp()))
    xs = torch.randn(5, 3, **D)
    assert torch.allclose(vmap(torch.func.grad(lambda v: sp.bmul(v, v).sum()))(xs), 2 * xs)


def test_what_no_formula_carries_is_refused_not_zero(sp):
    x, t = torch.randn(3, **D), torch.randn(3, **D)
    with pytest.raises(RuntimeError, match=r"sp::myexp: forward-mode AD over forward-mode AD"):
        jacfwd(jacfwd(lambda v: sp.myexp(v).sum()))(x)
    with pytest.raises(RuntimeError, match=r"forward AD with sp::gather_rows .*no forward formula"):
        jvp(lambda v: sp.gather_rows(v, torch.tensor([0])), (x.reshape(3, 1),), (t.reshape(3, 1),))
    with pytest.raises(RuntimeError, match=r"sp::plain: the op has no derivative formula"):
        jvp(sp.plain, (x,), (t,))
    with pytest.raises(RuntimeError, match=r"sp::plain: the op has no derivative formula"):
        sp.plain(x.clone().requires_grad_())
    assert torch.equal(sp.plain(x), x)
    xs = torch.randn(2, 3, **D)
    assert torch.equal(vmap(sp.plain)(xs), xs)   # no formula needed where nothing is differentiated
    with forward_ad.dual_level():
        assert torch.equal(sp.plain(x), x)


def test_only_what_needed_gradients_read_is_saved(sp):
    x = torch.randn(3, **D, requires_grad=True)
    y = torch.randn(3, **D)
    out = sp.bmul(x, y)   # only self needs a gradient: its formula reads other, not self
    assert out.grad_fn.saved_tensors[0] is None and out.grad_fn.saved_tensors[1] is y
    (gx,) = torch.autograd.grad(out.sum(), (x,))
    assert torch.equal(gx, y)
    r = sp.row_sum(torch.randn(2, 3, **D, requires_grad=True))
    assert r.grad_fn.saved_tensors == () and tuple(r.grad_fn.self_sym_sizes) == (2, 3)


def test_without_grad_or_tangent_the_op_runs_alone(sp):
    x = torch.randn(3, **D)
    out = sp.myexp(x)
    assert out.grad_fn is None and torch.equal(out, x.exp())

