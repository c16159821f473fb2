// Backward (and forward-mode) helpers the example extension's derivatives.yaml formulas call.
#pragma once

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>

#include <tuple>
#include <vector>

namespace myops {

// Sums a broadcast gradient back to an input's shape.
inline at::Tensor sum_to(const at::Tensor& grad, c10::SymIntArrayRef shape) {
  return at::sum_to(grad, shape);
}

// d(sum of list)/d(each element): the gradient itself, once per element.
inline std::vector<at::Tensor> stack_sum_backward(
    const at::Tensor& grad,
    const std::vector<std::vector<c10::SymInt>>& sizes) {
  if (!grad.defined()) {
    return std::vector<at::Tensor>(sizes.size());  // no gradient flows back
  }
  std::vector<at::Tensor> out;
  out.reserve(sizes.size());
  for (const auto& s : sizes) {
    out.push_back(grad.expand_symint(s).clone());
  }
  return out;
}

// sin' = cos, cos' = -sin; either incoming gradient may be undefined when
// only one output was used.
inline at::Tensor sincos_backward(const at::Tensor& grad_sin,
                                  const at::Tensor& grad_cos,
                                  const at::Tensor& self) {
  at::Tensor g = at::zeros_like(self);
  if (grad_sin.defined()) {
    g = g + grad_sin * self.cos();
  }
  if (grad_cos.defined()) {
    g = g - grad_cos * self.sin();
  }
  return g;
}

// Forward mode of sincos_sign: the tangents of sin and cos.
inline std::tuple<at::Tensor, at::Tensor> sincos_jvp(const at::Tensor& self_p, const at::Tensor& self_t) {
  return {self_t * self_p.cos(), -self_t * self_p.sin()};
}

}  // namespace myops
