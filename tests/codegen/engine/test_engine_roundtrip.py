"""Generated Functions at work: a tiny spec of our own (ops in `roundtrip::`)
is generated (our namespace, a helper header given by --include), built with
hand-written CPU kernels into a torch library by torch.utils.cpp_extension,
and its Functions run in libtorch's autograd engine, eagerly and under
compiled autograd.  The generated Autograd kernels (gen/ops/) create and
connect the Functions, as VariableType does for libtorch's own ops.  This
exercises what the text comparisons cannot: apply, release_variables, saved
outputs, tensor lists, grad_input_mask, compiled_args and apply_with_saved."""

import subprocess
import sys

import pytest
import torch
from torch.utils import cpp_extension

from support.spec_facts import REPO

pytestmark = pytest.mark.compile

NATIVE = """\
- func: roundtrip::my_mul(Tensor self, Tensor other) -> Tensor
- func: roundtrip::my_exp(Tensor self) -> Tensor
- func: roundtrip::my_sum_scaled(Tensor[] tensors, float scale) -> Tensor
"""

DERIVATIVES = """\
- name: my_mul(Tensor self, Tensor other) -> Tensor
  self, other: mul_backward_pair(grad, self, other, grad_input_mask)

- name: my_exp(Tensor self) -> Tensor
  self: grad * result

- name: my_sum_scaled(Tensor[] tensors, float scale) -> Tensor
  tensors: scaled_grads(grad, tensors, scale)
"""

# The user's own backward helpers (what FunctionsManual.h is for torch).
HELPERS = """\
#pragma once
#include <ATen/ATen.h>
#include <array>
#include <tuple>
#include <vector>

inline std::tuple<at::Tensor, at::Tensor> mul_backward_pair(
    const at::Tensor& grad, const at::Tensor& self, const at::Tensor& other, std::array<bool, 2> mask) {
  if (!grad.defined()) {
    return {};
  }
  return {mask[0] ? grad * other : at::Tensor(), mask[1] ? grad * self : at::Tensor()};
}

inline std::vector<at::Tensor> scaled_grads(const at::Tensor& grad, at::TensorList tensors, double scale) {
  std::vector<at::Tensor> out;
  for (const auto& t : tensors) {
    out.push_back(grad.defined() ? (grad * scale).expand(t.sizes()) : at::Tensor());
  }
  return out;
}
"""

# The forward CPU kernels, by hand (the generated Autograd kernels redispatch to them).
KERNELS = """\
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {
at::Tensor my_mul(const at::Tensor& self, const at::Tensor& other) { return at::mul(self, other); }
at::Tensor my_exp(const at::Tensor& self) { return at::exp(self); }
at::Tensor my_sum_scaled(at::TensorList tensors, double scale) { return at::stack(tensors).sum(0) * scale; }
}  // namespace

TORCH_LIBRARY_IMPL(roundtrip, CPU, m) {
  m.impl("my_mul", TORCH_FN(my_mul));
  m.impl("my_exp", TORCH_FN(my_exp));
  m.impl("my_sum_scaled", TORCH_FN(my_sum_scaled));
}
"""

# Everything generated, in one TU (quoted includes resolve next to each file).
OPS = ["my_mul", "my_exp", "my_sum_scaled"]
# One bucket (the Functions and the op kernels), and the digest of the generated code (codegen/emit/cache_key.py).
GENERATED = '#include "gen/unity/bucket_0.cpp"\n#include "gen/cache_key.cpp"\n'


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    root = tmp_path_factory.mktemp("roundtrip")
    (root / "include").mkdir()
    (root / "include" / "roundtrip_helpers.h").write_text(HELPERS)
    (root / "nf.yaml").write_text(NATIVE)
    (root / "d.yaml").write_text(DERIVATIVES)
    (root / "kernels.cpp").write_text(KERNELS)
    (root / "generated.cpp").write_text(GENERATED)
    gen = subprocess.run(
        [sys.executable, "-m", "autograd_scons", "generate", "--native-functions", str(root / "nf.yaml"),
         "--derivatives", str(root / "d.yaml"), "--out", str(root / "gen"), "--namespace",
         "roundtrip::grads", "--include", "roundtrip_helpers.h", "--unity", "1"],
        cwd=REPO, capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr
    # each op's TU, and its header declaring its caller (codegen/emit/op_kernels/callers.py)
    assert sorted(p.name for p in (root / "gen" / "ops").iterdir()) == sorted(f"roundtrip_{op}{ext}" for op in OPS
                                                                              for ext in (".cpp", ".h"))
    (root / "build").mkdir()
    cpp_extension.load("autograd_ext_roundtrip", [str(root / "kernels.cpp"), str(root / "generated.cpp")],
                       extra_cflags=["-O0", "-w"], extra_include_paths=[str(root / "include"), str(root)],
                       build_directory=str(root / "build"), is_python_module=False, verbose=False)
    return torch.ops.roundtrip


def leaves(*shape, n=2):
    torch.manual_seed(0)
    return [torch.randn(*shape, dtype=torch.double, requires_grad=True) for _ in range(n)]


def test_functions_compute_gradients_in_the_engine(ext):
    a, b = leaves(3)
    r = ext.my_mul(a, b)
    assert r.grad_fn.name() == "MyMulBackward0"
    (r * 2).sum().backward()
    assert torch.equal(a.grad, 2 * b.detach()) and torch.equal(b.grad, 2 * a.detach())

    a, b = leaves(4)
    e = ext.my_exp(a)
    assert e.grad_fn.name() == "MyExpBackward0"
    e.sum().backward()   # uses the saved output
    assert torch.allclose(a.grad, a.detach().exp())

    s = ext.my_sum_scaled([a, b], 3.0)
    assert s.grad_fn.name() == "MySumScaledBackward0"
    s.sum().backward()
    assert torch.allclose(a.grad, a.detach().exp() + 3) and torch.equal(b.grad, torch.full((4,), 3.0, dtype=torch.double))


def test_grad_input_mask_skips_inputs_without_grad(ext):
    a = torch.randn(3, dtype=torch.double, requires_grad=True)
    b = torch.randn(3, dtype=torch.double)
    ext.my_mul(a, b).sum().backward()
    assert torch.equal(a.grad, b) and b.grad is None


def test_gradcheck(ext):
    a, b = leaves(3)
    assert torch.autograd.gradcheck(ext.my_mul, (a, b))
    assert torch.autograd.gradcheck(ext.my_exp, (a,))
    assert torch.autograd.gradcheck(lambda x, y: ext.my_sum_scaled([x, y], 0.5), (a, b))


def test_saved_values_are_released_after_backward(ext):
    a, b = leaves(3)
    for r in (ext.my_mul(a, b), ext.my_exp(a), ext.my_sum_scaled([a, b], 1.0)):
        r.sum().backward(retain_graph=True)   # kept: a second pass works
        r.sum().backward()                    # released (release_variables)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            r.sum().backward()


def test_functions_run_under_compiled_autograd(ext):
    from torch._dynamo import compiled_autograd

    def loss(a, b):
        return (ext.my_mul(a, b) + ext.my_exp(a) + ext.my_sum_scaled([a, b], 2.0)).sum()

    a, b = leaves(5)
    loss(a, b).backward()
    eager = (a.grad.clone(), b.grad.clone())

    graphs = []

    def compiler(gm):
        graphs.append(gm.code)
        return gm

    a.grad = b.grad = None
    with compiled_autograd._enable(compiler):
        loss(a, b).backward()
    assert torch.allclose(a.grad, eager[0]) and torch.allclose(b.grad, eager[1])
    # our Functions ran through apply_with_saved into the traced graph
    assert len(graphs) == 1
    for op in ("MyMulBackward0", "MyExpBackward0", "MySumScaledBackward0"):
        assert op in graphs[0]
