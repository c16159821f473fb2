"""The example extension (specs/) under PyTorch 2's tooling: every op passes
every default test of torch.library.opcheck (schema, autograd registration,
fake tensors, AOT dispatch with dynamic shapes), which needs the Meta and
CompositeExplicitAutograd kernels its `dispatch:` registers; each op's
forward and backward under torch.compile(fullgraph=True) equal eager's."""

import pytest

from support import example_build

torch = pytest.importorskip("torch")
from support import extension_checks as checks  # noqa: E402

D = dict(dtype=torch.double)


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return example_build.myops(tmp_path_factory)


def _g(*shape):
    return torch.randn(*shape, **D).requires_grad_(True)


# op overload name -> (args, kwargs): differentiable inputs require grad, so
# that the autograd tests have something to check.
def samples(ops):
    x, mask = torch.randn(3, 4, **D), torch.rand(3, 4, **D)
    return {
        "bmul": ((_g(3, 4), _g(4)), {}),
        "scale": ((_g(3, 4), 2.5), {}),
        "scale_": ((x.clone(), 2.5), {}),
        "scale.out": ((x, 2.5), {"out": torch.empty(3, 4, **D)}),
        "row_sum": ((_g(2, 3, 5),), {}),
        "affine": ((_g(3, 4), _g(4), _g(4)), {}),
        "affine_no_bias": ((_g(3, 4), _g(4), None), {}),
        "stack_sum": (([_g(3, 4), _g(3, 4)],), {}),
        "sincos_sign": ((_g(3, 4),), {}),
        "myexp": ((_g(3, 4),), {}),
        "gather_rows": ((_g(3, 4), torch.tensor([2, 0, 2])), {}),
        "soft_clip": ((_g(3, 4), 0.7), {}),
        "cube": ((_g(3, 4),), {}),
        "masked_scale": ((_g(3, 4), mask), {}),
        "sq_norm": ((_g(3, 4),), {}),
        "prod_diff": ((_g(3, 4), _g(3, 4)), {}),
        "sum_as": ((_g(3, 4), [2, 3, 2], [0, -1]), {"dtype": torch.double}),
        "band": ((_g(3, 4), 1), {}),
        "band_below": ((_g(4, 3), -1), {}),
        "band_copy": ((_g(3, 4), 2), {}),
        "rows": ((_g(3, 4),), {}),
        "rows_copy": ((_g(3, 4),), {}),
        "block_sum": ((_g(3, 4), 2), {}),
        "block_sum_backward": ((_g(3, 2), 2), {}),
        "running_sum": ((_g(3, 4),), {}),
        "running_sum_total": ((_g(3, 4), torch.zeros(4, **D)), {}),
        "_segment_mean": ((_g(3, 4), torch.tensor([1, 0, 1]), 3), {}),
        "segment_mean": ((_g(3, 4), torch.tensor([1, 0, 1]), 3), {}),
    }


OPS = ["bmul", "scale", "scale_", "scale.out", "row_sum", "affine", "stack_sum", "sincos_sign", "myexp",
       "gather_rows", "soft_clip", "cube", "masked_scale", "sq_norm", "prod_diff", "sum_as", "band", "band_copy",
       "rows", "rows_copy", "block_sum", "block_sum_backward", "running_sum", "_segment_mean", "segment_mean"]
SAMPLES = OPS + ["affine_no_bias", "band_below", "running_sum_total"]


def overload(ops, name):
    base, _, over = name.partition(".")
    return getattr(getattr(ops, base), over or "default")


@pytest.mark.compile
@pytest.mark.parametrize("name", SAMPLES)
def test_opcheck_every_default_test_succeeds(ops, name):
    op = overload(ops, name.replace("_no_bias", "").replace("_below", "").replace("_total", ""))
    args, kwargs = samples(ops)[name]
    result = torch.library.opcheck(op, args, kwargs)
    assert set(result) == {"test_schema", "test_autograd_registration", "test_faketensor",
                           "test_aot_dispatch_dynamic"}, result
    assert all(v == "SUCCESS" for v in result.values()), (name, result)


@pytest.mark.compile
def test_every_example_op_is_checked(ops):
    registered = {n.split("::", 1)[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith("myops::")}
    assert registered == set(OPS)
    assert sorted(samples(ops)) == sorted(SAMPLES)


# torch 2.13's inductor fails on any custom op with a written optional
# argument given as None, torch.library's own custom_op too (mutates_args on
# an Optional[Tensor] left None: `<built-in function getitem> is not an
# OpOverload` in its lowering; aot_eager, and a total given, work): strict,
# so the case runs again once torch lowers it.
_INDUCTOR_MISSES = {("running_sum", "inductor"): "torch 2.13's inductor cannot lower a custom op whose written "
                    "optional argument is None (torch.library.custom_op's too)"}


@pytest.mark.compile
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("case", checks.CASE_NAMES + ["sq_norm"])
def test_torch_compile_fullgraph_forward_and_backward_equal_eager(ops, case, backend, request):
    """aot_eager: Dynamo and AOTAutograd (fake tensors, functionalization, the
    joint graph through our Autograd kernels and Functions); inductor: also
    the generated code (its first C++ compile takes a minute here)."""
    if (case, backend) in _INDUCTOR_MISSES:
        request.applymarker(pytest.mark.xfail(reason=_INDUCTOR_MISSES[case, backend], strict=True))
    if case == "sq_norm":
        fn, inputs = ops.sq_norm, (_g(3, 4),)
    else:
        fn, _, inputs, _ = checks.cases(ops)[case]
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend=backend, dynamic=False)
    eager_out, ours = fn(*inputs), compiled(*inputs)
    torch.testing.assert_close(ours, eager_out)
    torch.testing.assert_close(checks.grads_of(compiled, inputs), checks.grads_of(fn, inputs))


@pytest.mark.compile
def test_torch_compile_fullgraph_inplace_and_out_variants_equal_eager(ops):
    def inplace(a):
        b = a * 1
        ops.scale_(b, 1.5)
        return b

    def out_variant(a):
        out = torch.empty_like(a)
        ops.scale.out(a, 1.5, out=out)
        return out

    x = _g(3, 4)
    torch._dynamo.reset()
    compiled = torch.compile(inplace, fullgraph=True, backend="aot_eager", dynamic=False)
    torch.testing.assert_close(compiled(x), inplace(x))
    torch.testing.assert_close(checks.grads_of(compiled, (x,)), checks.grads_of(inplace, (x,)))
    y = x.detach()
    torch.testing.assert_close(torch.compile(out_variant, fullgraph=True, backend="aot_eager")(y), y * 1.5)
