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

${own_helpers}
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
// per library in support.cpp (codegen/emit/functions/support.py): a Function's TU calls
// them instead of instantiating torch's templates again.
#pragma GCC visibility push(hidden)
${step_declarations}
#pragma GCC visibility pop

}  // namespace ${ns}
