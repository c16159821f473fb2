// extname's CPU kernel on PyTorch's stable ABI: torch::stable::Tensor and
// torch/csrc/stable/ only (the build compiles it with -DTORCH_STABLE_ONLY,
// so an unstable header is an error here, and audits the library's imports).
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/util/Exception.h>

#include "stable/kernels.h"

namespace extname::native {

torch::stable::Tensor scaled_square_cpu(const torch::stable::Tensor& self, double alpha) {
  using torch::headeronly::ScalarType;
  const torch::stable::Tensor x = torch::stable::contiguous(self);
  torch::stable::Tensor out = torch::stable::empty_like(x);
  auto loop = [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      o[i] = static_cast<T>(alpha) * in[i] * in[i];
    }
  };
  if (x.scalar_type() == ScalarType::Double) {
    loop(double{});
  } else {
    STD_TORCH_CHECK(x.scalar_type() == ScalarType::Float, "extname: float or double tensors only");
    loop(float{});
  }
  return out;
}

}  // namespace extname::native
