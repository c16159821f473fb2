"""Generated Functions at work: a tiny spec of our own is generated (in our
namespace, with a helper header given by --include), built into a Python
extension with g++, and its Functions run in libtorch's autograd engine,
eagerly and under compiled autograd.  This exercises what the text
comparisons cannot: apply, release_variables, saved outputs, tensor lists,
grad_input_mask, compiled_args and apply_with_saved."""

import importlib.util
import os
import subprocess
import sys
import sysconfig

import pytest

torch = pytest.importorskip("torch", reason="builds a torch extension")

import cxx

if not cxx.have_compiler():
    pytest.skip(f"no C++ compiler ({cxx.CXX})", allow_module_level=True)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = "autograd_ext_roundtrip"

NATIVE = """\
- func: my_mul(Tensor self, Tensor other) -> Tensor
- func: my_exp(Tensor self) -> Tensor
- func: my_sum_scaled(Tensor[] tensors, float scale) -> Tensor
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

# Forward functions that record our Functions in the graph, as VariableType
# does for libtorch's own.
BINDING = """\
#include <torch/extension.h>
#include <torch/csrc/autograd/functions/utils.h>
#include "Functions.h"

namespace gen = roundtrip::grads;
using torch::autograd::SavedVariable;

template <class F>
static c10::intrusive_ptr<F> make_node() {
  return c10::make_intrusive<F>();
}

at::Tensor my_mul(const at::Tensor& self, const at::Tensor& other) {
  at::Tensor result;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    result = at::mul(self, other);
  }
  if (torch::autograd::compute_requires_grad(self, other)) {
    auto fn = make_node<gen::MyMulBackward0>();
    fn->set_next_edges(torch::autograd::collect_next_edges(self, other));
    fn->self_ = SavedVariable(self, false);
    fn->other_ = SavedVariable(other, false);
    torch::autograd::set_history(result, fn);
  }
  return result;
}

at::Tensor my_exp(const at::Tensor& self) {
  at::Tensor result;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    result = at::exp(self);
  }
  if (torch::autograd::compute_requires_grad(self)) {
    auto fn = make_node<gen::MyExpBackward0>();
    fn->set_next_edges(torch::autograd::collect_next_edges(self));
    torch::autograd::set_history(result, fn);
    fn->result_ = SavedVariable(result, true);
  }
  return result;
}

at::Tensor my_sum_scaled(std::vector<at::Tensor> tensors, double scale) {
  at::Tensor result;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    result = at::stack(tensors).sum(0) * scale;
  }
  if (torch::autograd::compute_requires_grad(at::TensorList(tensors))) {
    auto fn = make_node<gen::MySumScaledBackward0>();
    fn->set_next_edges(torch::autograd::collect_next_edges(at::TensorList(tensors)));
    for (const auto& t : tensors) {
      fn->tensors_.emplace_back(t, false);
    }
    fn->tensors_size_ = tensors.size();
    fn->scale = scale;
    torch::autograd::set_history(result, fn);
  }
  return result;
}

PYBIND11_MODULE(%s, m) {
  m.def("my_mul", &my_mul);
  m.def("my_exp", &my_exp);
  m.def("my_sum_scaled", &my_sum_scaled);
}
""" % MODULE


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    root = tmp_path_factory.mktemp("roundtrip")
    (root / "include").mkdir()
    (root / "include" / "roundtrip_helpers.h").write_text(HELPERS)
    (root / "nf.yaml").write_text(NATIVE)
    (root / "d.yaml").write_text(DERIVATIVES)
    (root / "binding.cpp").write_text(BINDING)
    gen = subprocess.run(
        [sys.executable, "-m", "codegen", "generate", "--native-functions", str(root / "nf.yaml"),
         "--derivatives", str(root / "d.yaml"), "--out", str(root / "gen"), "--namespace",
         "roundtrip::grads", "--include", "roundtrip_helpers.h", "--unity", "1"],
        cwd=REPO, capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr
    flags = cxx.torch_flags() + cxx.python_flags() + [
        "-O0", "-w", "-DTORCH_API_INCLUDE_EXTENSION_H", f"-I{root / 'include'}", f"-I{root / 'gen'}"]
    objs = ["binding.o", "functions.o"]
    results = cxx.run_all([[cxx.CXX, *flags, "-c", "binding.cpp", "-o", objs[0]],
                           [cxx.CXX, *flags, "-c", "gen/unity/bucket_0.cpp", "-o", objs[1]]], cwd=str(root))
    failed = [str(r) for r in results if r.returncode != 0]
    assert failed == [], "\n\n".join(failed)
    so = MODULE + sysconfig.get_config_var("EXT_SUFFIX")
    link = cxx.run([cxx.CXX, "-shared", *objs, "-o", so, *cxx.link_flags()], cwd=str(root))
    assert link.returncode == 0, str(link)
    spec = importlib.util.spec_from_file_location(MODULE, str(root / so))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
