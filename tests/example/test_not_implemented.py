"""The formula built-ins derivatives.yaml documents (`not_implemented`,
`not_implemented_list`, `wrap_opt_if`) work in an extension's formulas
without FunctionsManual.h: tests/fixtures/nimpl_ext builds, its forward
works, and backward through an input whose formula is not_implemented
raises an error naming the op."""

import os

import pytest

from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.emit.functions.prelude_headers import render_preludes

from support import example_build

FIXTURE = os.path.join("tests", "fixtures", "nimpl_ext")


def test_prelude_defines_the_builtins_unless_functions_manual_is_included():
    ours = render_preludes(EmitOptions(namespace="x::y"))["prelude_impl.h"]
    assert "inline at::Tensor not_implemented(const char* name" in ours
    assert "not_implemented_list(" in ours and "wrap_opt_if(" in ours
    manual = render_preludes(EmitOptions(namespace="x::y", includes=("torch/csrc/autograd/FunctionsManual.h",)))
    assert "not_implemented" not in manual["prelude_impl.h"]  # libtorch's own, from FunctionsManual.h


@pytest.fixture(scope="module")
def nimpl(tmp_path_factory):
    torch = pytest.importorskip("torch")
    torch.ops.load_library(example_build.library(tmp_path_factory, FIXTURE, "nimpl_ext"))
    return torch.ops.nimpl


@pytest.mark.compile
def test_backward_through_a_not_implemented_input_raises_naming_the_op(nimpl):
    import torch
    x = torch.randn(3, dtype=torch.double, requires_grad=True)
    y = torch.randn(3, dtype=torch.double)
    out = nimpl.twice(x, y)
    torch.testing.assert_close(out, 2 * x * y)
    out.sum().backward()  # self's formula (with wrap_opt_if) works
    torch.testing.assert_close(x.grad, 2 * y)
    y.requires_grad_(True)
    out = nimpl.twice(x, y)
    assert out.grad_fn.name() == "TwiceBackward0"
    with pytest.raises(NotImplementedError, match=r"the derivative for 'twice' is not implemented\.") as e:
        out.sum().backward()
    assert isinstance(e.value, RuntimeError)
    # Only self asked for: the not_implemented formula is not evaluated.
    (gx,) = torch.autograd.grad(nimpl.twice(x, y).sum(), [x])
    torch.testing.assert_close(gx, 2 * y.detach())


@pytest.mark.compile
def test_not_implemented_list_raises_with_its_reason(nimpl):
    import torch
    xs = [torch.randn(2, requires_grad=True) for _ in range(2)]
    out = nimpl.total(xs)
    torch.testing.assert_close(out, xs[0] + xs[1])
    with pytest.raises(NotImplementedError, match="the derivative for 'total' is not implemented: "
                                                  "a reason given in derivatives.yaml"):
        out.sum().backward()
