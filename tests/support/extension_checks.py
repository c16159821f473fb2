"""Checks of the example extension's differentiable ops (specs/), run against
the built library: `ops` is `torch.ops.myops` once it is loaded.  Used by
tests/example/test_scons_example.py (not a test module itself)."""

import pytest
import torch
from torch.autograd import gradcheck

D = dict(dtype=torch.double)


def leaf(*shape):
    return torch.randn(*shape, **D).requires_grad_(True)


def grads_of(fn, inputs):
    """Gradients of sum(fn(inputs)) (of each tensor output) for each input."""
    out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = sum(o.sum() for o in outs if o.requires_grad)
    return torch.autograd.grad(total, inputs)


# op name -> (our call, the same computation with built-in ops, inputs)
def cases(ops):
    x, y, w, b, z = leaf(3, 4), leaf(4), leaf(4), leaf(4), leaf(3, 4)
    idx = torch.tensor([2, 0, 2])
    mask = torch.rand(3, 4, **D)
    seg = torch.tensor([1, 0, 1])
    return {
        "bmul": (ops.bmul, torch.mul, (x, y), "BmulBackward0"),
        "scale": (lambda a: ops.scale(a, 2.5), lambda a: a * 2.5, (x,), "ScaleBackward0"),
        "row_sum": (ops.row_sum, lambda a: a.sum(-1), (x,), "RowSumBackward0"),
        "affine": (ops.affine, lambda a, c, d: a * c + d, (x, w, b), "AffineBackward0"),
        "affine_no_bias": (lambda a, c: ops.affine(a, c, None), lambda a, c: a * c, (x, w), "AffineBackward0"),
        "stack_sum": (lambda a, c: ops.stack_sum([a, c]), lambda a, c: a + c, (x, leaf(3, 4)),
                      "StackSumBackward0"),
        "sincos_sign": (lambda a: ops.sincos_sign(a)[:2], lambda a: (a.sin(), a.cos()), (x,),
                        "SincosSignBackward0"),
        "sincos_sign_cos_only": (lambda a: ops.sincos_sign(a)[1], torch.cos, (x,), "SincosSignBackward0"),
        "myexp": (ops.myexp, torch.exp, (x,), "MyexpBackward0"),
        "gather_rows": (lambda a: ops.gather_rows(a, idx), lambda a: a.index_select(0, idx), (x,),
                        "GatherRowsBackward0"),
        "soft_clip": (lambda a: ops.soft_clip(a, 0.7), lambda a: (a * 0.7).tanh(), (x,), "SoftClipBackward0"),
        "cube": (ops.cube, lambda a: a ** 3, (x,), "CubeBackward0"),
        "masked_scale": (lambda a: ops.masked_scale(a, mask), lambda a: a * mask, (x,), "MaskedScaleBackward0"),
        # named gradients: each output's gradient by name, and only one output used
        "prod_diff": (lambda a, c: tuple(ops.prod_diff(a, c)), lambda a, c: (a * c, a - c), (x, z),
                      "ProdDiffBackward0"),
        "prod_diff_diff_only": (lambda a, c: ops.prod_diff(a, c)[1], torch.sub, (x, z), "ProdDiffBackward0"),
        "prod_diff_prod_only": (lambda a, c: ops.prod_diff(a, c)[0], torch.mul, (x, z), "ProdDiffBackward0"),
        # saved SymInt[], int[] and ScalarType? arguments
        "sum_as": (lambda a: ops.sum_as(a, [2, 3, 2], [0, -1]), lambda a: a.reshape(2, 3, 2).sum([0, -1]), (x,),
                   "SumAsBackward0"),
        "sum_as_dtype": (lambda a: ops.sum_as(a, [4, 3], [0], dtype=torch.double),
                         lambda a: a.reshape(4, 3).sum([0], dtype=torch.double), (x,), "SumAsBackward0"),
        # views (the generated ADInplaceOrView kernel: tests/example/test_views_pt2.py), and their copies
        "band": (lambda a: ops.band(a, 1), lambda a: torch.diagonal(a, 1), (x,), "BandBackward0"),
        "band_below": (lambda a: ops.band(a, -2), lambda a: torch.diagonal(a, -2), (x,), "BandBackward0"),
        "band_copy": (lambda a: ops.band_copy(a, 1), lambda a: torch.diagonal_copy(a, 1), (x,), "BandBackward0_copy"),
        "rows": (lambda a: tuple(ops.rows(a)), lambda a: a.unbind(0), (x,), "RowsBackward0"),
        "rows_one": (lambda a: ops.rows(a)[2], lambda a: a[2], (x,), "RowsBackward0"),
        "rows_copy": (lambda a: tuple(ops.rows_copy(a)), lambda a: tuple(torch.unbind_copy(a, 0)), (x,),
                      "RowsBackward0_copy"),
        # a SymInt argument; each formula calls the other op through its generated caller
        "block_sum": (lambda a: ops.block_sum(a, 2), lambda a: a.reshape(3, 2, 2).sum(-1), (x,), "BlockSumBackward0"),
        "block_sum_backward": (lambda g: ops.block_sum_backward(g, 2), lambda g: g.repeat_interleave(2, -1), (x,),
                               "BlockSumBackwardBackward0"),
        # a written optional argument (none given, then one), which gets no gradient
        "running_sum": (ops.running_sum, lambda a: a.sum(0), (x,), "RunningSumBackward0"),
        "running_sum_total": (lambda a: ops.running_sum(a, torch.zeros(4, **D)), lambda a: a.sum(0), (x,),
                              "RunningSumBackward0"),
        # a saved intermediate: the count, an output of the internal op, used by its backward;
        # segment 2 is empty (its mean is zero)
        "segment_mean": (lambda a: ops.segment_mean(a, seg, 3),
                         lambda a: torch.zeros(3, 4, **D).index_add(0, seg, a)
                         / torch.tensor([1.0, 2.0, 1.0], **D).unsqueeze(-1), (x,), "SegmentMeanBackward0"),
    }


class _Unloaded:
    """Stands in for `ops` where only the table is read, not run: any
    attribute is another stand-in."""

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self


UNLOADED = _Unloaded()
# The case names, read off the table (no library needed to list them);
# tests/example/test_example_coverage.py checks that they cover every Function.
CASE_NAMES = list(cases(UNLOADED))


def case_functions() -> dict:
    """case name -> the Function its op's grad_fn is."""
    return {name: case[3] for name, case in cases(UNLOADED).items()}


def check_gradcheck(ops, name):
    fn, _, inputs, _ = cases(ops)[name]
    assert gradcheck(fn, inputs, check_undefined_grad=True)


def check_matches_builtin(ops, name):
    fn, ref, inputs, op = cases(ops)[name]
    out = fn(*inputs)
    first = out[0] if isinstance(out, (tuple, list)) else out
    assert first.grad_fn.name() == op
    for ours, theirs in zip(grads_of(fn, inputs), grads_of(ref, inputs)):
        torch.testing.assert_close(ours, theirs)


def check_inplace_and_out(ops):
    x = leaf(3, 4)
    y = x * 1
    assert ops.scale_(y, 3.0) is None  # `-> ()`: updates y in place
    assert y.grad_fn.name() == "ScaleBackward0"
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 3.0))

    def scaled(a):
        b = a * 1
        ops.scale_(b, 1.5)
        return b

    assert gradcheck(scaled, (leaf(2, 3),))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        ops.scale_(x, 2.0)
    out = torch.empty(3, 4, **D)
    assert ops.scale.out(x.detach(), 2.0, out=out) is None  # `-> ()`: writes out
    torch.testing.assert_close(out, x.detach() * 2)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ops.scale.out(x, 2.0, out=out)


def check_saved_tensors_released(ops):
    x = leaf(3, 4)
    y = ops.myexp(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = ops.cube(x).sum()
    z.backward(retain_graph=True)
    z.backward()
    torch.testing.assert_close(x.grad, torch.exp(x.detach()) + 2 * 3 * x.detach() ** 2)


def check_no_graph_without_requires_grad(ops):
    a, b = torch.randn(3, 4, **D), torch.randn(4, **D)
    out = ops.bmul(a, b)
    assert not out.requires_grad and out.grad_fn is None
    # The mask is not differentiable: requiring grad on it alone builds nothing,
    mask = torch.rand(3, 4, **D).requires_grad_(True)
    assert ops.masked_scale(a, mask).grad_fn is None
    # and next to a differentiable input it gets no gradient.
    x = leaf(3, 4)
    ops.masked_scale(x, mask).sum().backward()
    assert mask.grad is None and x.grad is not None
    # The integer output of sincos_sign does not require grad.
    assert not ops.sincos_sign(x)[2].requires_grad
    with torch.no_grad():
        assert ops.myexp(x).grad_fn is None


def backward_grads(fn, inputs, compiled):
    """`.grad` of fresh copies of `inputs` after backward of sum(fn(...)),
    eagerly or under compiled autograd (which traces each Function's
    apply_with_saved: its own code path, keyed process-wide)."""
    from torch._dynamo import compiled_autograd
    leaves = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    out = fn(*leaves)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = sum(o.sum() for o in outs if o.requires_grad)
    if compiled:
        with compiled_autograd._enable(torch.compile(backend="eager")):
            total.backward()
    else:
        total.backward()
    return [t.grad for t in leaves if t.requires_grad]


def check_compiled_autograd_matches_eager(ops, name):
    fn, ref, inputs, _ = cases(ops)[name]
    eager = backward_grads(fn, inputs, compiled=False)
    assert all(g is not None for g in eager)
    for ours, builtin in zip(eager, backward_grads(ref, inputs, compiled=False)):
        torch.testing.assert_close(ours, builtin)  # a wrong eager gradient would pass the next check
    for ours, theirs in zip(backward_grads(fn, inputs, compiled=True), eager):
        torch.testing.assert_close(ours, theirs)


def check_saved_dtype_and_sizes(ops):
    """sum_as in another dtype than its input's: the output has it, the
    gradient comes back in the input's (the backward checks the saved dtype
    against the gradient's, and uses the saved sizes and dims)."""
    x = leaf(2, 6)
    out = ops.sum_as(x, [3, 2, 2], [1], dtype=torch.float32)
    assert out.dtype == torch.float32 and out.shape == (3, 2)
    weights = torch.arange(6, dtype=torch.float32).reshape(3, 2)
    (out * weights).sum().backward()
    expected = weights.double().unsqueeze(1).expand(3, 2, 2).reshape(2, 6)
    assert x.grad.dtype == torch.double
    torch.testing.assert_close(x.grad, expected)
