// The example extension's CUDA kernels, written by hand and compiled by nvcc
// (site_scons/autograd_scons/site_tools/nvcc.py) when torch is a CUDA build.  As in
// kernels.cpp, this file only defines them: native_functions.yaml's
// `dispatch: CUDA:` names them, gen/ops/<op>.h declares them and
// gen/ops/<op>.cpp registers them.  One TU for all of them: each nvcc TU
// pays ~30 s of torch's headers per architecture.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <vector>

#include "ops/myops_cube.h"
#include "ops/myops_row_sum.h"
#include "ops/myops_soft_clip.h"

namespace myops::native {
namespace {

constexpr int kThreads = 256;

// Enough blocks for one element per thread, capped: the loops stride over the rest.
unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535));
}

// The elementwise kernels: out[i] = f(in[i]), f a functor (device lambdas
// would need nvcc's --extended-lambda).
template <typename scalar_t, typename F>
__global__ void map_kernel(const scalar_t* in, scalar_t* out, int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = f(in[i]);
  }
}

template <typename scalar_t>
struct Cube {
  __device__ scalar_t operator()(scalar_t x) const { return x * x * x; }
};

template <typename scalar_t>
struct SoftClip {
  scalar_t beta;
  __device__ scalar_t operator()(scalar_t x) const { return tanh(beta * x); }
};

// One thread per row of the contiguous [rows, n] view.
template <typename scalar_t>
__global__ void row_sum_kernel(const scalar_t* in, scalar_t* out, int64_t rows, int64_t n) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += int64_t(blockDim.x) * gridDim.x) {
    scalar_t acc = 0;
    for (int64_t j = 0; j < n; ++j) {
      acc += in[r * n + j];
    }
    out[r] = acc;
  }
}

// F<scalar_t>{args...} applied to each element of self, into a new
// contiguous tensor on self's device, on the current stream.
template <template <typename> class F, typename... Args>
at::Tensor map_elementwise(const at::Tensor& self, Args... args) {
  const c10::cuda::CUDAGuard guard(self.device());
  const at::Tensor x = self.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  const int64_t n = x.numel();
  if (n == 0) {
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "myops_cuda_elementwise", [&] {
    map_kernel<<<blocks_for(n), kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), n,
        F<scalar_t>{static_cast<scalar_t>(args)...});
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace

at::Tensor cube_cuda(const at::Tensor& self) {
  return map_elementwise<Cube>(self);
}

at::Tensor soft_clip_cuda(const at::Tensor& self, double beta) {
  return map_elementwise<SoftClip>(self, beta);
}

at::Tensor row_sum_cuda(const at::Tensor& self) {
  TORCH_CHECK(self.dim() >= 1, "row_sum: needs at least one dimension");
  const c10::cuda::CUDAGuard guard(self.device());
  const at::Tensor x = self.contiguous();
  std::vector<int64_t> shape = x.sizes().vec();
  const int64_t n = shape.back();
  shape.pop_back();
  at::Tensor out = at::empty(shape, x.options());
  const int64_t rows = out.numel();
  if (rows == 0) {
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "row_sum_cuda", [&] {
    row_sum_kernel<scalar_t><<<blocks_for(rows), kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), rows, n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace myops::native
