"""The example's ops under autocast and vmap (specs/native_functions.yaml's
`autocast:` and `vmap:`): each op with a batch rule against a loop over the
batch (every kind: pointwise, leading_dims, a rule written by hand; an
in-place op, ops with several outputs, a view and a list of views written
through), with no fallback warning; under CPU autocast, each policy as
ATen's wrapper applies it, the gradients in the inputs' dtypes, the cache,
torch.compile fullgraph=True giving eager's values and dtypes.  (Against
ATen's own ops: tests/codegen/emit/op_kernels/test_aten_differential.py.)"""

import warnings

import pytest

from support import example_build

torch = pytest.importorskip("torch")
from torch.func import grad, jacfwd, jacrev, vmap  # noqa: E402

pytestmark = pytest.mark.compile

D = dict(dtype=torch.double)
FALLBACK = "we have not yet implemented the batching rule for "


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return example_build.myops(tmp_path_factory)


def _g(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), **D)


def results(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def loop(fn, args, in_dims):
    """fn over the batch one example at a time, each result stacked along dimension 0."""
    n = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    outs = [results(fn(*[a if d is None else a.select(d, i) for a, d in zip(args, in_dims)])) for i in range(n)]
    return [torch.stack(list(o)) for o in zip(*outs)]


def cases(ops):
    """name -> (fn, args with batch dims, in_dims)."""
    x, y, pos = _g(3, 4, 5), _g(4, 3, 5, seed=1), _g(3, 4, 5, seed=2).abs() + 0.5
    return {
        "bmul": (ops.bmul, (x, y), (0, 1)),
        "bmul broadcast": (ops.bmul, (x, _g(5, seed=3)), (0, None)),
        "scale": (lambda t: ops.scale(t, 2.5), (x,), (-1,)),
        "affine": (ops.affine, (x, _g(3, 5, seed=7), _g(5, seed=4)), (0, 0, None)),
        "affine no bias": (lambda a, b: ops.affine(a, b), (x, _g(5, 4, seed=5)), (1, 1)),
        "sincos_sign (three outputs)": (ops.sincos_sign, (x,), (0,)),
        "myexp": (ops.myexp, (x,), (2,)),
        "soft_clip": (lambda t: ops.soft_clip(t, 0.5), (x,), (0,)),
        "cube": (ops.cube, (x,), (1,)),
        "prod_diff (two outputs)": (ops.prod_diff, (x, y), (0, 1)),
        "row_sum (leading_dims)": (ops.row_sum, (x,), (1,)),
        "block_sum (leading_dims)": (lambda t: ops.block_sum(t, 2), (_g(3, 4, 6, seed=6),), (0,)),
        "block_sum_backward (leading_dims)": (lambda t: ops.block_sum_backward(t, 2), (x,), (-1,)),
        "band (a view, leading_dims)": (lambda t: ops.band(t, 1), (x,), (1,)),
        "rows (a list of views, a rule by hand)": (ops.rows, (pos,), (2,)),
    }


def test_each_op_with_a_rule_is_batched_as_a_loop_and_without_the_fallback(ops, capfd):
    torch._C._functorch._set_vmap_fallback_warning_enabled(True)
    wrong = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, (fn, args, dims) in cases(ops).items():
            got, want = results(vmap(fn, dims)(*args)), loop(fn, args, dims)
            if len(got) != len(want) or not all(a.dtype == b.dtype and torch.allclose(a, b) for a, b in zip(got, want)):
                wrong.append(name)
        vmap(ops.gather_rows, (0, None))(_g(3, 4, 5), torch.tensor([1, 0]))   # no rule: the fallback, which warns
    printed = capfd.readouterr().err + "".join(str(w.message) for w in caught)
    assert wrong == []
    assert [n for n in ("bmul", "scale", "affine", "row_sum", "band", "rows", "block_sum", "prod_diff")
            if f"{FALLBACK}myops::{n}." in printed] == []
    assert f"{FALLBACK}myops::gather_rows." in printed


def test_an_in_place_op_writes_each_example(ops):
    x = _g(3, 4)
    base = x.clone()
    vmap(lambda t: ops.scale_(t, 3.0) or t, 1)(base)   # through the batched tensor, into the base's storage
    assert torch.equal(base, x * 3.0)


@pytest.mark.parametrize("view", ["band", "rows"])
def test_writes_through_a_vmapped_view_reach_the_base(ops, view):
    def write(v):
        def f(t):
            base = t * 1.0
            part = v(base)
            (part[1] if isinstance(part, (list, tuple)) else part).mul_(2.0).add_(1.0)
            return base
        return f
    ours = {"band": lambda t: ops.band(t, 1), "rows": ops.rows}[view]
    atens = {"band": lambda t: torch.diagonal(t, 1, -2, -1), "rows": lambda t: t.unbind(0)}[view]
    x = _g(3, 4, 5)
    for d in (0, 1, -1):
        assert torch.equal(vmap(write(ours), d)(x.movedim(0, d)), vmap(write(atens), d)(x.movedim(0, d))), d
    # and the gradients through the write, per example
    def loss(v):
        def f(t):
            base = t * 1.5
            part = v(base)
            (part[0] if isinstance(part, (list, tuple)) else part).mul_(3.0)
            return (base * base).sum()
        return f
    if view == "band":   # (a list of views may not be written in place where it requires grad: ATen's rule too)
        assert torch.equal(vmap(grad(loss(ours)))(x), vmap(grad(loss(atens)))(x))


def test_transforms_of_transforms(ops):
    x = _g(4, 5)
    f = lambda t: ops.bmul(ops.cube(t), ops.myexp(t)).sum()   # noqa: E731
    ref = lambda t: ((t * t * t) * t.exp()).sum()   # noqa: E731
    assert torch.allclose(vmap(grad(f))(_g(3, 4, 5)), vmap(grad(ref))(_g(3, 4, 5)))
    assert torch.allclose(jacrev(lambda t: ops.row_sum(ops.cube(t)))(x), jacrev(lambda t: (t ** 3).sum(-1))(x))
    assert torch.allclose(jacfwd(lambda t: ops.row_sum(ops.cube(t)))(x), jacfwd(lambda t: (t ** 3).sum(-1))(x))
    assert torch.allclose(vmap(vmap(ops.bmul))(_g(2, 3, 5), _g(2, 3, 5, seed=1)),
                          _g(2, 3, 5) * _g(2, 3, 5, seed=1))


# ---------------------------------------------------------------- autocast (CPU, bfloat16)

F32, BF16 = torch.float32, torch.bfloat16


def cast_count(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn()
    return out, sum(1 for e in prof.events() if e.name == "aten::_to_copy")


def test_each_policy_casts_as_atens_wrapper_does(ops):
    x, w, b = _g(4, 5).float(), _g(5, seed=1).float(), _g(5, seed=2).float()
    with torch.autocast("cpu", dtype=BF16):
        # lower_precision_fp: every floating input to bfloat16 (float64 left alone)
        assert ops.affine(x, w, b).dtype == BF16
        assert torch.equal(ops.affine(x, w, b), ops.affine(x.to(BF16), w.to(BF16), b.to(BF16)))
        assert ops.affine(x.double(), w.double()).dtype == torch.float64
        # fp32: to float32
        assert ops.myexp(x.to(BF16)).dtype == F32 and torch.equal(ops.myexp(x.to(BF16)), x.to(BF16).float().exp())
        # promote: the widest of the inputs, not float64
        assert ops.bmul(x.to(BF16), w).dtype == F32 and ops.bmul(x.to(BF16), w.to(BF16)).dtype == BF16
        # fp32_set_opt_dtype: no dtype given, float32 is; given, kept; an ineligible input left alone
        assert ops.sum_as(x.to(BF16), [20], [0]).dtype == F32
        assert ops.sum_as(x.to(BF16), [20], [0], dtype=torch.float64).dtype == torch.float64
        assert ops.sum_as(x.double(), [20], [0]).dtype == torch.float64
        # no policy: today's behaviour, the inputs as they come
        assert ops.cube(x).dtype == F32 and ops.cube(x.to(BF16)).dtype == BF16
    # outside autocast nothing is cast
    assert ops.affine(x, w, b).dtype == F32 and ops.myexp(x.to(BF16)).dtype == BF16


def test_gradients_come_back_in_the_inputs_dtypes_and_weights_are_cast_once(ops):
    x, w = _g(4, 5).float().requires_grad_(), _g(5, seed=1).float().requires_grad_()
    with torch.autocast("cpu", dtype=BF16):
        out = ops.affine(x, w)
    assert out.dtype == BF16
    out.sum().backward()
    assert (x.grad.dtype, w.grad.dtype) == (F32, F32)
    # d(sum x*w)/dw = the column sums of x, computed in bfloat16, then cast back
    assert torch.equal(w.grad, x.detach().to(BF16).sum(0).float())

    xs = [_g(4, 5, seed=10 + i).float() for i in range(3)]

    def three_calls(affine):
        with torch.autocast("cpu", dtype=BF16):
            return [affine(x, w) for x in xs]
    _, ours = cast_count(lambda: three_calls(ops.affine))
    _, atens = cast_count(lambda: three_calls(torch.nn.functional.linear))   # ATen's, on the same leaf
    assert ours == atens == 4   # three inputs, one weight: the weight is cast once (the autocast cache)


def test_torch_compile_fullgraph_under_autocast_gives_eagers_values_and_dtypes(ops):
    def f(x, w, b):
        with torch.autocast("cpu", dtype=BF16):
            y = ops.affine(x, w, b)
            return ops.myexp(y), ops.bmul(y, x)
    x, w, b = _g(4, 5).float(), _g(5, seed=1).float(), _g(5, seed=2).float()
    eager = f(x, w, b)
    with torch._inductor.config.patch(force_disable_caches=True):
        compiled = torch.compile(f, fullgraph=True)(x, w, b)
    assert [t.dtype for t in eager] == [F32, F32] and [t.dtype for t in compiled] == [t.dtype for t in eager]
    assert all(torch.equal(a, b) for a, b in zip(compiled, eager))


def test_torch_compile_of_a_vmapped_function_reaches_the_rules(ops, capfd):
    """fullgraph=True: dynamo takes vmap as it is, and the plumbing runs under fake tensors while it traces."""
    torch._C._functorch._set_vmap_fallback_warning_enabled(True)

    def f(t, u):
        b = ops.bmul(t, u)
        ops.band(b, 1).mul_(2.0)   # a write through the batched view
        return ops.row_sum(b)

    def atens(t, u):
        b = t * u
        torch.diagonal(b, 1, -2, -1).mul_(2.0)
        return b.sum(-1)
    x, y = _g(3, 4, 5), _g(3, 4, 5, seed=1)
    with torch._inductor.config.patch(force_disable_caches=True):
        compiled = torch.compile(vmap(f), fullgraph=True)(x, y)
    assert torch.allclose(compiled, vmap(atens)(x, y)) and compiled.shape == (3, 4)
    assert FALLBACK not in capfd.readouterr().err
