"""A written optional argument (issue 52): the example's
`myops::running_sum(Tensor src, Tensor(a!)? total=None) -> Tensor`, the
schema torch.library's custom ops give an optional argument they mutate.
The kernel gets the dispatcher's `const std::optional<at::Tensor> &` (the
library loads: it once ended the process, `Tensor? vs Tensor`), the
Autograd kernel bumps `total`'s version counter, so a value autograd saved
and the op then wrote raises autograd's own error at backward (it once gave
a silently wrong gradient), and a `total` that requires grad is refused: a
written argument gets no gradient.  Its gradcheck, opcheck and torch.compile
cases are in the example's tables."""

import pytest

from support import example_build

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.compile
D = dict(dtype=torch.double)


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return example_build.myops(tmp_path_factory)


def test_the_total_is_written_and_its_version_bumped(ops):
    src, total = torch.randn(3, 4, **D), torch.ones(4, **D)
    result = ops.running_sum(src, total)
    torch.testing.assert_close(result, src.sum(0))
    torch.testing.assert_close(total, 1 + src.sum(0))
    assert total._version == 1
    assert ops.running_sum(src)._version == 0   # no total: nothing written


def test_a_saved_value_then_written_raises_autograds_error(ops):
    x, c = torch.randn(4, **D, requires_grad=True), torch.randn(4, **D)
    y = x * c                                   # MulBackward0 saves c
    ops.running_sum(torch.randn(2, 4, **D), c)  # writes c
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("leaf", [True, False])
def test_a_total_that_requires_grad_is_refused(ops, leaf):
    src = torch.randn(3, 4, **D, requires_grad=True)
    total = torch.zeros(4, **D, requires_grad=True)
    if leaf:
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            ops.running_sum(src, total)
    else:
        with pytest.raises(RuntimeError, match="argument 'total' is written by the op and gets no gradient"):
            ops.running_sum(src, total * 1)


def test_under_torch_compile_the_total_is_written_too(ops):
    def f(src, total):
        return ops.running_sum(src, total).sin().sum()

    src = torch.randn(3, 4, **D, requires_grad=True)
    eager_total, compiled_total = torch.zeros(4, **D), torch.zeros(4, **D)
    f(src, eager_total).backward()
    eager_grad, src.grad = src.grad, None
    torch._dynamo.reset()
    torch.compile(f, fullgraph=True, backend="aot_eager")(src, compiled_total).backward()
    torch.testing.assert_close(compiled_total, eager_total)
    torch.testing.assert_close(src.grad, eager_grad)
