${banner}
${description}

#include ${class_header}
#include "${prelude_impl_h}"
#include "${load_check_h}"
${callee_headers}
${derivative_lines}

namespace ${ns} {

// The backward as a pure function of gradients and saved values, so that
// compiled autograd can trace it.
static variable_list ${op}_apply_functional(
    variable_list&& grads,
    std::array<bool, ${n}> needs_input_grad${params}) {
  SlotRanges gen;
  ${ranges}
  variable_list grad_inputs(gen.size());
  ${backward}
  return grad_inputs;
}

static variable_list ${op}_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
  return {};
#else
  auto packed_args = PackedArgs(args);
  auto needs_input_grad = ${unpack_mask};
  ${unpack_args}
  return ${op}_apply_functional(variable_list(grads), needs_input_grad${args});
#endif
}

variable_list ${op}::apply(variable_list&& grads) {
  ::autograd_functions_load::check_loaded();
  ${lock}
  ${unpacks}
  SlotRanges gen;
  ${ranges}
  auto needs_input_grad = std::array<bool, ${n}>{
    ${should_compute}
  };
  return ${op}_apply_functional(std::move(grads), needs_input_grad${args});
}

void ${op}::compiled_args(CompiledNodeArgs& args) const {
  ::autograd_functions_load::check_loaded();
  ${collect}
}

variable_list ${op}::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
  return {};
#else
  ${before}
  // Compiled autograd binds the backward by this key, process-wide: the
  // qualified name (mangled: an identifier), as name() is the op's alone
  // and another library's class, or libtorch's, may share it.
  static const std::string compiled_autograd_bind_key = typeid(${op}).name();
  static bool called = false;
  if (!called) {
    called = true;
    // The schema as a constant table, built and bound once per library in
    // support.cpp: inline, every Function compiled its own vector and call.
    static constexpr PackedTypeOf schema[] = {
        ${packed_types}
    };
    compiled_autograd_bind(saved, compiled_autograd_bind_key, ${op}_apply_functional_ivalue, schema, std::size(schema));
  }
  PackedArgs packed_args;
  ${unpacks}
  SlotRanges gen;
  ${ranges}
  auto needs_input_grad = std::array<bool, ${n}>{
    ${should_compute}
  };
  ${pack}
  auto output_result = compiled_autograd_apply_functional(
      packed_args, next_edges(), saved, grads, compiled_autograd_bind_key);
  ${after}
  return output_result;
#endif
}

// Claims this class for this library as it loads (load_check.h says what that checks).
static const bool ${op}_claimed =
    ::autograd_functions_load::claim(typeid(${op}), "${ns}::${op}");

}  // namespace ${ns}
