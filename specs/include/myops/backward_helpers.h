// Backward (and forward-mode) helpers the example extension's derivatives.yaml formulas call.
#pragma once

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>

#include <algorithm>
#include <optional>
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

// An output's gradient, or zeros when that output was not used.
inline at::Tensor or_zeros(const at::Tensor& grad, const at::Tensor& like) {
  return grad.defined() ? grad : at::zeros_like(like);
}

// sum_as's backward: the summed dims put back (they are dims of `size`),
// expanded to `size`, reshaped to self's sizes, in self's dtype.  The
// gradient arrives in the output's dtype (`dtype`, or self's without one):
// checked, so that a dtype or size saved wrong fails here instead of
// passing unnoticed (the engine would cast a wrong dtype back silently).
inline at::Tensor sum_as_backward(const at::Tensor& grad, c10::SymIntArrayRef self_sizes,
                                  c10::SymIntArrayRef size, at::IntArrayRef dims,
                                  std::optional<at::ScalarType> dtype, at::ScalarType self_dtype) {
  TORCH_CHECK(grad.scalar_type() == dtype.value_or(self_dtype), "sum_as_backward: the saved dtype ",
              dtype.has_value() ? c10::toString(*dtype) : "None", " is not the gradient's ",
              grad.scalar_type());
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) {
    wrapped.push_back(at::maybe_wrap_dim(d, static_cast<int64_t>(size.size())));
  }
  std::sort(wrapped.begin(), wrapped.end());
  at::Tensor g = grad;
  for (int64_t d : wrapped) {
    g = g.unsqueeze(d);
  }
  return g.expand_symint(size).reshape_symint(self_sizes).to(self_dtype);
}

// band's: the gradient laid on the k-th diagonal (of the last two
// dimensions) of zeros of self's sizes.
inline at::Tensor band_backward(const at::Tensor& grad, c10::SymIntArrayRef self_sizes, int64_t k) {
  return at::diagonal_backward_symint(grad, self_sizes, k, -2, -1);
}

// rows': the rows' gradients stacked, zeros for rows that got none.
inline at::Tensor rows_backward(const std::vector<at::Tensor>& grads, c10::SymIntArrayRef self_sizes,
                                const at::TensorOptions& options) {
  std::vector<at::Tensor> rows;
  rows.reserve(grads.size());
  for (const auto& g : grads) {
    rows.push_back(g.defined() ? g : at::zeros_symint(self_sizes.slice(1), options));
  }
  return at::stack(rows, 0);
}

// segment_mean's: the rows of `values` summed per segment (`index` gives
// each row's), and a segment's count shaped to divide such sums (an empty
// segment counts as one: its mean is zero).
inline at::Tensor segment_sum(const at::Tensor& values, const at::Tensor& index, const c10::SymInt& num_segments) {
  std::vector<c10::SymInt> shape = values.sym_sizes().vec();
  shape[0] = num_segments;
  return at::zeros_symint(shape, values.options()).index_add(0, index, values);
}

inline at::Tensor per_segment(const at::Tensor& count, int64_t dim) {
  std::vector<int64_t> shape(static_cast<size_t>(dim), 1);
  shape[0] = -1;
  return count.clamp_min(1).reshape(shape);
}

}  // namespace myops
