${banner}
// Out-of-line definitions every generated TU calls, compiled once per
// library (codegen/templates/support.cpp, filled by codegen/emit/functions/support.py).

#include "${prelude_impl_h}"
#include "${load_check_h}"

${load_check_definitions}
${cache_tag_definitions}

namespace ${ns} {

variable_list compiled_autograd_apply_functional(
    const PackedArgs& packed_args,
    const torch::autograd::edge_list& next_edges,
    SwapSavedVariables& saved,
    const variable_list& grads,
    const std::string& name) {
  auto output_metadata = torch::dynamo::autograd::IValuePacker<
      std::vector<std::optional<torch::autograd::InputMetadata>>>::pack(
      torch::dynamo::autograd::get_input_metadata(next_edges));
  return torch::dynamo::autograd::getPyCompilerInterface()->call_function(
      saved.get_py_compiler(), "apply_functional", name, grads, packed_args.vec(), output_metadata);
}

void compiled_autograd_bind(
    SwapSavedVariables& saved,
    const std::string& key,
    FunctionalApply fn,
    const PackedTypeOf* packed_types,
    size_t n) {
  std::vector<at::TypePtr> schema;
  schema.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    schema.push_back(packed_types[i]());
  }
  torch::dynamo::autograd::getPyCompilerInterface()->bind_function(
      saved.get_py_compiler(), key, fn, std::move(schema));
}

}  // namespace ${ns}

namespace ${ns} {

${step_definitions}
}  // namespace ${ns}
