${banner}
// What every generated autograd Function definition needs.
#pragma once

#include "${prelude_h}"

#include <ATen/ATen.h>
#include <ATen/core/List.h>
#include <ATen/core/functional.h>
#include <c10/util/irange.h>
#include <torch/csrc/dynamo/compiled_autograd.h>

#include <algorithm>
#include <array>
#include <tuple>

${helper_includes}
// Formulas written for libtorch call its backward helpers unqualified; the
// empty namespace makes the directive valid without FunctionsManual.h.
namespace torch::autograd::generated::details {}
using namespace torch::autograd::generated::details;

namespace ${ns} {

using namespace torch::autograd;
using at::ArrayRef;
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;
using at::TensorGeometry;
using at::TensorList;
using c10::fmap;
using std::optional;
using torch::autograd::IndexRange;
using torch::autograd::TypeAndSize;

${formula_builtins}
// Hands out consecutive gradient slots: one per tensor input, n per list.
class SlotRanges {
 public:
  IndexRange range(size_t n) {
    next_ += n;
    return {next_ - n, next_};
  }
  size_t size() const {
    return next_;
  }

 private:
  size_t next_ = 0;
};

inline void copy_range(variable_list& out, IndexRange r, const Tensor& t) {
  TORCH_INTERNAL_ASSERT(r.second <= out.size() && r.second - r.first == 1,
                        "gradient slot range does not fit a single tensor");
  out[r.first] = t;
}

inline void copy_range(variable_list& out, IndexRange r, at::ArrayRef<Tensor> ts) {
  TORCH_INTERNAL_ASSERT(r.second <= out.size() && r.second - r.first == ts.size(),
                        "gradient slot range does not fit the tensor list");
  std::copy(ts.begin(), ts.end(), out.begin() + static_cast<std::ptrdiff_t>(r.first));
}

inline bool any_variable_defined(const variable_list& vs) {
  return std::any_of(vs.begin(), vs.end(), [](const Tensor& v) { return v.defined(); });
}

inline std::vector<Tensor> unpack_list(at::ArrayRef<SavedVariable> xs,
                                       const c10::intrusive_ptr<Node>& saved_for) {
  std::vector<Tensor> out;
  out.reserve(xs.size());
  for (const SavedVariable& x : xs) {
    out.emplace_back(x.unpack(saved_for));
  }
  return out;
}

// Undefined tensors come back as nullopt, as the op received them.
inline c10::List<std::optional<Tensor>> unpack_opt_list(at::ArrayRef<SavedVariable> xs) {
  c10::List<std::optional<Tensor>> out;
  out.reserve(xs.size());
  for (const SavedVariable& x : xs) {
    Tensor t = x.unpack();
    out.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
  }
  return out;
}

// Compiled autograd: run this Function's apply_functional in the traced
// graph.  Defined once per library, in support.cpp.
__attribute__((visibility("hidden"))) variable_list compiled_autograd_apply_functional(
    const PackedArgs& packed_args,
    const torch::autograd::edge_list& next_edges,
    SwapSavedVariables& saved,
    const variable_list& grads,
    const std::string& name);

// Compiled autograd: bind this Function's apply_functional_ivalue under
// `key`, with the packed types of its arguments, once per process.  Defined
// once per library, in support.cpp.
using PackedTypeOf = at::TypePtr (*)();
using FunctionalApply = variable_list (*)(const variable_list&, const ivalue_list&);
__attribute__((visibility("hidden"))) void compiled_autograd_bind(
    SwapSavedVariables& saved,
    const std::string& key,
    FunctionalApply fn,
    const PackedTypeOf* packed_types,
    size_t n);

// Compiled autograd's steps on the common saved types, instantiated once
// per library in support.cpp (codegen/emit/support.py): a Function's TU calls
// them instead of instantiating torch's templates again.
#pragma GCC visibility push(hidden)
${step_declarations}
#pragma GCC visibility pop

}  // namespace ${ns}
