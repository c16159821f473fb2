"""The example's block_sum and block_sum_backward (specs/) call each other
from their formulas through the generated callers (`myops::block_sum_backward`,
`myops::block_sum`: codegen/emit/op_kernels/callers.py), so each call goes through the
dispatcher: a dispatch mode sees it, under fake tensors the Meta kernel
serves it (the CPU kernel would read a fake tensor's data and fail), and
double backward records the called op's own Function.  Their SymInt
argument reaches the CPU kernels as c10::SymInt (guard_int) and the Meta
kernels symbolic (dynamic shapes).  gradcheck, gradgradcheck, forward AD,
opcheck and torch.compile run them with the other ops
(tests/support/extension_checks.py, test_forward_ad.py, test_extension_pt2.py)."""

import pytest

from support import example_build

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode  # noqa: E402

D = dict(dtype=torch.double)


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return example_build.myops(tmp_path_factory)


class Calls(TorchDispatchMode):
    """The ops that reach the dispatcher below autograd, by name."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.compile
def test_the_backward_formula_calls_the_other_op_through_the_dispatcher(ops):
    x = torch.randn(3, 8, **D, requires_grad=True)
    y = ops.block_sum(x, 4)
    with Calls() as calls:
        (g,) = torch.autograd.grad(y, x, torch.ones(3, 2, **D))
    assert "myops.block_sum_backward.default" in calls.names, calls.names
    torch.testing.assert_close(g, torch.ones(3, 8, **D))


@pytest.mark.compile
def test_under_fake_tensors_the_called_op_runs_its_meta_kernel(ops):
    with FakeTensorMode():
        x = torch.empty(5, 12, **D, requires_grad=True)
        y = ops.block_sum(x, 3)
        (g,) = torch.autograd.grad(y, x, torch.empty(5, 4, **D))
        (gg,) = torch.autograd.grad(ops.block_sum_backward(y, 3), y, torch.empty(5, 12, **D))
    assert isinstance(g, FakeTensor) and g.shape == (5, 12)
    assert isinstance(gg, FakeTensor) and gg.shape == (5, 4)


@pytest.mark.compile
def test_double_backward_records_the_called_ops_function(ops):
    x = torch.randn(2, 6, **D, requires_grad=True)
    v = torch.randn(2, 3, **D, requires_grad=True)
    (g,) = torch.autograd.grad(ops.block_sum(x, 2), x, v, create_graph=True)
    assert g.grad_fn.name() == "BlockSumBackwardBackward0"   # block_sum_backward's own Autograd kernel
    (gv,) = torch.autograd.grad(g, v, torch.ones(2, 6, **D))
    torch.testing.assert_close(gv, torch.full((2, 3), 2.0, **D))


@pytest.mark.compile
def test_the_symint_argument_stays_symbolic_under_dynamic_shapes(ops):
    def f(a):
        return ops.block_sum(a, 2) * 2

    from torch._dynamo.testing import CompileCounterWithBackend
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(f, fullgraph=True, backend=counter, dynamic=True)
    for n in (4, 6, 10):
        a = torch.randn(3, n, **D, requires_grad=True)
        torch.testing.assert_close(compiled(a), f(a))
        torch.testing.assert_close(torch.autograd.grad(compiled(a).sum(), a)[0], torch.full((3, n), 2.0, **D))
    assert counter.frame_count == 1   # one graph for every size: the Meta kernels' shapes are symbolic
