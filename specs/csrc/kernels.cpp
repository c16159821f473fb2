// The example extension's kernels, written by hand.  native_functions.yaml's
// `dispatch:` names them; the generated gen/ops/<op>.h declare them (in
// myops::native, with the dispatcher's signature) and gen/ops/<op>.cpp
// register them, with the schemas, Autograd kernels and backward Functions.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <tuple>
#include <vector>

#include "myops/backward_helpers.h"
#include "ops/myops__segment_mean.h"
#include "ops/myops_affine.h"
#include "ops/myops_band.h"
#include "ops/myops_block_sum.h"
#include "ops/myops_block_sum_backward.h"
#include "ops/myops_bmul.h"
#include "ops/myops_cube.h"
#include "ops/myops_gather_rows.h"
#include "ops/myops_masked_scale.h"
#include "ops/myops_myexp.h"
#include "ops/myops_prod_diff.h"
#include "ops/myops_row_sum.h"
#include "ops/myops_rows.h"
#include "ops/myops_running_sum.h"
#include "ops/myops_scale.h"
#include "ops/myops_scale_.h"
#include "ops/myops_scale_out.h"
#include "ops/myops_segment_mean.h"
#include "ops/myops_sincos_sign.h"
#include "ops/myops_soft_clip.h"
#include "ops/myops_sq_norm.h"
#include "ops/myops_stack_sum.h"
#include "ops/myops_sum_as.h"

namespace myops::native {

// CompositeExplicitAutograd: compositions of ATen ops, for every backend.

at::Tensor bmul(const at::Tensor& self, const at::Tensor& other) {
  return self * other;
}

at::Tensor scale(const at::Tensor& self, const at::Scalar& alpha) {
  return self * alpha;
}

void scale_(at::Tensor& self, const at::Scalar& alpha) {
  self.mul_(alpha);
}

void scale_out(const at::Tensor& self, const at::Scalar& alpha, at::Tensor& out) {
  at::mul_out(out, self, at::scalar_tensor(alpha, self.options()));
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

std::tuple<at::Tensor, at::Tensor> prod_diff(const at::Tensor& self, const at::Tensor& other) {
  return {self * other, self - other};
}

at::Tensor sum_as(const at::Tensor& self, c10::SymIntArrayRef size, at::IntArrayRef dims,
                  std::optional<at::ScalarType> dtype) {
  return self.reshape_symint(size).sum(dims, /*keepdim=*/false, dtype);
}

// CPU: a plain loop over the rows (not an ATen composition), hence a Meta
// kernel that only computes the output's shape.

at::Tensor row_sum_cpu(const at::Tensor& self) {
  TORCH_CHECK(self.dim() >= 1, "row_sum: needs at least one dimension");
  const at::Tensor x = self.contiguous();
  std::vector<int64_t> shape = x.sizes().vec();
  const int64_t n = shape.back();
  shape.pop_back();
  at::Tensor out = at::empty(shape, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "row_sum_cpu", [&] {
    const scalar_t* in = x.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t r = 0; r < out.numel(); ++r) {
      scalar_t acc = 0;
      for (int64_t j = 0; j < n; ++j) {
        acc += in[r * n + j];
      }
      o[r] = acc;
    }
  });
  return out;
}

at::Tensor row_sum_meta(const at::Tensor& self) {
  TORCH_CHECK(self.dim() >= 1, "row_sum: needs at least one dimension");
  std::vector<c10::SymInt> shape = self.sym_sizes().vec();
  shape.pop_back();
  return at::empty_symint(shape, self.options());
}

// Views: as_strided of the input, so that they share its storage (the
// generated ADInplaceOrView kernel makes them autograd views of it), and
// their inverses for functionalization: the base with a mutated view
// written back, a new tensor (ATen's scatters).

// band works on the last two dimensions, the others kept as they are (so
// its vmap rule is `leading_dims`: the batch dimension is one more of them).
at::Tensor band(const at::Tensor& self, int64_t k) {
  TORCH_CHECK(self.dim() >= 2, "band: expected a matrix (or a batch of them), got ", self.dim(), " dimensions");
  const c10::SymInt& n = self.sym_size(-2);
  const c10::SymInt& m = self.sym_size(-1);
  c10::SymInt length = k >= 0 ? (m - k).min(n) : (n + k).min(m);
  c10::SymInt offset = self.sym_storage_offset() + (k >= 0 ? self.sym_stride(-1) * k : self.sym_stride(-2) * -k);
  std::vector<c10::SymInt> sizes = self.sym_sizes().slice(0, self.dim() - 2).vec();
  std::vector<c10::SymInt> strides = self.sym_strides().slice(0, self.dim() - 2).vec();
  sizes.push_back(length.max(c10::SymInt(0)));
  strides.push_back(self.sym_stride(-2) + self.sym_stride(-1));
  return self.as_strided_symint(sizes, strides, offset);
}

at::Tensor band_scatter(const at::Tensor& base, const at::Tensor& mutated_view, int64_t k) {
  return at::diagonal_scatter(base, mutated_view, k, -2, -1);
}

std::vector<at::Tensor> rows(const at::Tensor& self) {
  TORCH_CHECK(self.dim() >= 1, "rows: expected at least one dimension");
  // one output per row: the count must be known (as unbind's)
  const int64_t n = self.sym_size(0).guard_int(__FILE__, __LINE__);
  std::vector<at::Tensor> out;
  out.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(self.as_strided_symint(self.sym_sizes().slice(1), self.sym_strides().slice(1),
                                         self.sym_storage_offset() + self.sym_stride(0) * i));
  }
  return out;
}

at::Tensor rows_scatter(const at::Tensor& base, const at::Tensor& mutated_view, int64_t view_idx) {
  return at::select_scatter(base, mutated_view, 0, view_idx);
}

// rows under vmap (`vmap: {rule: rows_batch_rule}`, the signature the
// generated ops/myops_rows.h declares): each example's rows are the batch's
// along the dimension after the batch's, so with the batch moved second,
// rows() of it (through the dispatcher: views of the input, as unbind's)
// gives each row with the batch first.
std::tuple<std::vector<at::Tensor>, std::optional<int64_t>> rows_batch_rule(const at::Tensor& self,
                                                                            std::optional<int64_t> self_bdim) {
  return {myops::rows(self.movedim(*self_bdim, 1)), 0};
}

// A SymInt argument arrives as c10::SymInt.  On CPU tensors the sizes are
// concrete: guard_int reads the value (under torch.compile it also records
// that the compiled graph holds for this value only).  The Meta kernels keep
// it symbolic: they compute shapes with it, so fake tensors with dynamic
// shapes pass through.

at::Tensor block_sum_cpu(const at::Tensor& self, c10::SymInt block) {
  const int64_t b = block.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(self.dim() >= 1 && b > 0 && self.size(-1) % b == 0,
              "block_sum: the last dimension must be a multiple of block, got ", self.sizes(), " and ", b);
  const at::Tensor x = self.contiguous();
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() /= b;
  at::Tensor out = at::empty(shape, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "block_sum_cpu", [&] {
    const scalar_t* in = x.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      scalar_t acc = 0;
      for (int64_t j = 0; j < b; ++j) {
        acc += in[i * b + j];
      }
      o[i] = acc;
    }
  });
  return out;
}

at::Tensor block_sum_meta(const at::Tensor& self, c10::SymInt block) {
  TORCH_CHECK(self.dim() >= 1, "block_sum: needs at least one dimension");
  std::vector<c10::SymInt> shape = self.sym_sizes().vec();
  shape.back() = shape.back() / block;
  return at::empty_symint(shape, self.options());
}

at::Tensor block_sum_backward_cpu(const at::Tensor& grad_output, c10::SymInt block) {
  const int64_t b = block.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(grad_output.dim() >= 1 && b > 0, "block_sum_backward: needs a dimension and a positive block");
  const at::Tensor g = grad_output.contiguous();
  std::vector<int64_t> shape = g.sizes().vec();
  shape.back() *= b;
  at::Tensor out = at::empty(shape, g.options());
  AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "block_sum_backward_cpu", [&] {
    const scalar_t* in = g.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      o[i] = in[i / b];
    }
  });
  return out;
}

at::Tensor block_sum_backward_meta(const at::Tensor& grad_output, c10::SymInt block) {
  TORCH_CHECK(grad_output.dim() >= 1, "block_sum_backward: needs at least one dimension");
  std::vector<c10::SymInt> shape = grad_output.sym_sizes().vec();
  shape.back() = shape.back() * block;
  return at::empty_symint(shape, grad_output.options());
}

// A written optional argument: the dispatcher passes it as an optional,
// whose tensor the kernel writes in place (at::Tensor's methods are const).
at::Tensor running_sum(const at::Tensor& src, const std::optional<at::Tensor>& total) {
  at::Tensor sum = src.sum(0);
  if (total.has_value() && total->defined()) {
    total->add_(sum);
  }
  return sum;
}

// The mean of each segment, and the count that the backward reuses.
std::tuple<at::Tensor, at::Tensor> _segment_mean(const at::Tensor& src, const at::Tensor& index,
                                                 c10::SymInt num_segments) {
  at::Tensor ones = at::ones_symint({src.sym_size(0)}, src.options());
  at::Tensor count = at::zeros_symint({num_segments}, src.options()).index_add(0, index, ones);
  return {myops::segment_sum(src, index, num_segments) / myops::per_segment(count, src.dim()), count};
}

// CompositeImplicitAutograd: differentiated through what it calls.

// The users' op: the mean alone, from the internal op (through its caller,
// so the dispatcher, and with it _segment_mean's Autograd kernel, runs).
at::Tensor segment_mean(const at::Tensor& src, const at::Tensor& index, c10::SymInt num_segments) {
  return std::get<0>(myops::_segment_mean(src, index, num_segments));
}

at::Tensor sq_norm(const at::Tensor& self) {
  return (self * self).sum();
}

}  // namespace myops::native
