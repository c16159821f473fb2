// The example extension's forward kernels (CPU), written by hand.  The
// schemas, the Autograd kernels and the backward Functions are generated.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <tuple>

namespace {

at::Tensor bmul(const at::Tensor& self, const at::Tensor& other) {
  return self * other;
}

at::Tensor scale(const at::Tensor& self, const at::Scalar& alpha) {
  return self * alpha;
}

at::Tensor& scale_(at::Tensor& self, const at::Scalar& alpha) {
  return self.mul_(alpha);
}

at::Tensor& scale_out(const at::Tensor& self, const at::Scalar& alpha, at::Tensor& out) {
  return at::mul_out(out, self, at::scalar_tensor(alpha, self.options()));
}

at::Tensor row_sum(const at::Tensor& self) {
  return self.sum(-1);
}

at::Tensor affine(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias) {
  at::Tensor out = input * weight;
  if (bias.has_value() && bias->defined()) {
    out = out + *bias;
  }
  return out;
}

at::Tensor stack_sum(at::TensorList tensors) {
  TORCH_CHECK(!tensors.empty(), "stack_sum: needs at least one tensor");
  at::Tensor out = tensors[0].clone();
  for (size_t i = 1; i < tensors.size(); ++i) {
    out.add_(tensors[i]);
  }
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> sincos_sign(const at::Tensor& self) {
  return {self.sin(), self.cos(), self.sign().to(at::kLong)};
}

at::Tensor myexp(const at::Tensor& self) {
  return self.exp();
}

at::Tensor gather_rows(const at::Tensor& self, const at::Tensor& index) {
  return self.index_select(0, index);
}

at::Tensor soft_clip(const at::Tensor& self, double beta) {
  return (self * beta).tanh();
}

at::Tensor cube(const at::Tensor& self) {
  return self * self * self;
}

at::Tensor masked_scale(const at::Tensor& self, const at::Tensor& mask) {
  return self * mask;
}

}  // namespace

TORCH_LIBRARY_IMPL(myops, CPU, m) {
  m.impl("bmul", TORCH_FN(bmul));
  m.impl("scale", TORCH_FN(scale));
  m.impl("scale_", TORCH_FN(scale_));
  m.impl("scale.out", TORCH_FN(scale_out));
  m.impl("row_sum", TORCH_FN(row_sum));
  m.impl("affine", TORCH_FN(affine));
  m.impl("stack_sum", TORCH_FN(stack_sum));
  m.impl("sincos_sign", TORCH_FN(sincos_sign));
  m.impl("myexp", TORCH_FN(myexp));
  m.impl("gather_rows", TORCH_FN(gather_rows));
  m.impl("soft_clip", TORCH_FN(soft_clip));
  m.impl("cube", TORCH_FN(cube));
  m.impl("masked_scale", TORCH_FN(masked_scale));
}
