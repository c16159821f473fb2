// extname's CPU kernel (a plain loop) and its Meta kernel (shape only), as
// native_functions.yaml's `dispatch:` names them.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "ops/extname_scaled_square.h"

namespace extname::native {

at::Tensor scaled_square_cpu(const at::Tensor& self, const at::Scalar& alpha) {
  const at::Tensor x = self.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scaled_square_cpu", [&] {
    const scalar_t a = alpha.to<scalar_t>();
    const scalar_t* in = x.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      o[i] = a * in[i] * in[i];
    }
  });
  return out;
}

at::Tensor scaled_square_meta(const at::Tensor& self, const at::Scalar& alpha) {
  return at::empty_symint(self.sym_sizes(), self.options());
}

}  // namespace extname::native
