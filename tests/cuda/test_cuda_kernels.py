"""The example's CUDA kernels (specs/csrc/kernels_cuda.cu) as the loaded
library registers them, under whichever torch runs this module: the
installed CPU torch (the `.cu` file is left out, and so are its
registrations), and torch 2.14.1 with CUDA, where tests/cuda/test_cuda_tier.py
runs this module (with test_extension_pt2.py and test_forward_ad.py)
against its build.  With a GPU, the CUDA kernels' results and gradients
are checked against the CPU kernels'."""

import pytest

from support import example_build

torch = pytest.importorskip("torch")
from support import extension_checks as checks  # noqa: E402

pytestmark = pytest.mark.compile

# The ops whose `dispatch:` names a CUDA kernel (specs/native_functions.yaml).
CUDA_OPS = ["row_sum", "cube", "soft_clip"]
NO_GPU = (f"no GPU visible to torch {torch.__version__} (torch.cuda.is_available() is False): "
          "run the `cuda` tier (tests/cuda/test_cuda_tier.py) on a machine with a CUDA GPU")


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return example_build.myops(tmp_path_factory)


def dispatch_keys(op):
    """The dispatch keys with a kernel registered for myops::op."""
    return {line.split(":")[0].split("[")[0] for line in torch._C._dispatch_dump(f"myops::{op}").splitlines()
            if ": registered at " in line}


@pytest.mark.parametrize("case", checks.CASE_NAMES)
def test_gradcheck(ops, case):
    checks.check_gradcheck(ops, case)


def test_cuda_kernels_are_registered_exactly_when_torch_is_a_cuda_build(ops):
    for op in CUDA_OPS:
        keys = dispatch_keys(op)
        assert "Autograd" in keys and ("CPU" in keys or "CompositeExplicitAutograd" in keys), (op, keys)
        assert ("CUDA" in keys) == (torch.version.cuda is not None), (op, keys)
    assert "CUDA" not in dispatch_keys("bmul")  # no CUDA kernel of its own


def cuda_cases(ops):
    x = torch.randn(5, 7, dtype=torch.double)
    return {"row_sum": (ops.row_sum, x), "cube": (ops.cube, x), "soft_clip": (lambda a: ops.soft_clip(a, 0.7), x),
            "row_sum_3d": (ops.row_sum, torch.randn(2, 3, 4, dtype=torch.double)),
            "cube_strided": (ops.cube, x.t()), "cube_float": (ops.cube, x.float()),
            "cube_empty": (ops.cube, torch.empty(0, 3, dtype=torch.double))}


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)
@pytest.mark.parametrize("case", ["row_sum", "cube", "soft_clip", "row_sum_3d", "cube_strided", "cube_float",
                                  "cube_empty"])
def test_cuda_kernel_equals_cpu_forward_and_backward(ops, case):
    fn, x = cuda_cases(ops)[case]
    cpu = x.clone().requires_grad_(x.is_floating_point())
    gpu = x.cuda().requires_grad_(x.is_floating_point())
    out_cpu, out_gpu = fn(cpu), fn(gpu)
    assert out_gpu.device.type == "cuda"
    torch.testing.assert_close(out_gpu.cpu(), out_cpu)
    if x.numel():
        (g_cpu,), (g_gpu,) = (torch.autograd.grad(o.sum(), i) for o, i in ((out_cpu, cpu), (out_gpu, gpu)))
        torch.testing.assert_close(g_gpu.cpu(), g_cpu)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)
@pytest.mark.parametrize("op", CUDA_OPS)
def test_gradcheck_and_opcheck_on_cuda_tensors(ops, op):
    fn, x = cuda_cases(ops)[op]
    leaf = x.cuda().requires_grad_(True)
    assert torch.autograd.gradcheck(fn, (leaf,))
    args = (leaf, 0.7) if op == "soft_clip" else (leaf,)
    torch.library.opcheck(getattr(ops, op).default, args)
