"""extname's CUDA kernel: registered when torch is a CUDA build (the
library was built with nvcc), and equal to the CPU one on a GPU."""

import pytest
import torch

import extname  # noqa: F401  (registers the operators)

op = torch.ops.extname.scaled_square


@pytest.mark.skipif(torch.version.cuda is None, reason="torch is a CPU-only build: the CUDA kernel is not built "
                    "(install a CUDA build of torch and rebuild to test it)")
def test_the_cuda_kernel_is_registered():
    dump = torch._C._dispatch_dump("extname::scaled_square")
    assert any(line.startswith("CUDA: registered") for line in dump.splitlines()), dump


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible: the kernel's values and "
                    "gradients on the GPU are checked on a machine with one")
def test_cuda_matches_cpu():
    a = torch.randn(5, 7, dtype=torch.double, requires_grad=True)
    g = a.detach().cuda().requires_grad_(True)
    torch.testing.assert_close(op(g, 1.5).cpu(), op(a, 1.5))
    assert torch.autograd.gradcheck(lambda t: op(t, 1.5), (g,))
