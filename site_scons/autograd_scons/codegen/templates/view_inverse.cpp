
// The view's inverse: autograd's reverse view function (AlwaysView), and
// functionalization's write-back of a mutated view into its base (the
// declared inverse, a new tensor).
at::Tensor ${stem}_inverse(const at::Tensor& base, const at::Tensor& mutated_view,
    at::functionalization::InverseReturnMode mode${params}) {
  if (mode == at::functionalization::InverseReturnMode::AlwaysView) {
    // the base's geometry over the mutated view's storage (a view shares its base's)
    return mutated_view.as_strided_symint(base.sym_sizes(), base.sym_strides(), base.sym_storage_offset());
  }
  return ${inverse};
}
