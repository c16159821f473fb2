// extname's CUDA kernel (built by nvcc when torch is a CUDA build; with a
// CPU-only torch it is left out, and so is its `dispatch: CUDA:` line).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>

#include "ops/extname_scaled_square.h"

namespace extname::native {
namespace {

constexpr int kThreads = 256;

template <typename scalar_t>
__global__ void scaled_square_kernel(const scalar_t* in, scalar_t* out, scalar_t alpha, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = alpha * in[i] * in[i];
  }
}

}  // namespace

at::Tensor scaled_square_cuda(const at::Tensor& self, const at::Scalar& alpha) {
  const c10::cuda::CUDAGuard guard(self.device());
  const at::Tensor x = self.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  const int64_t n = x.numel();
  if (n == 0) {
    return out;
  }
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535));
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scaled_square_cuda", [&] {
    scaled_square_kernel<scalar_t><<<blocks, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), alpha.to<scalar_t>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace extname::native
