std::optional<at::Tensor> ${name}_ = ${name};
if (${name}_.has_value() && ${name}_bdim) {
  *${name}_ = ${name}_->movedim(*${name}_bdim, 0);
} else if (${name}_.has_value()) {
  std::vector<c10::SymInt> sizes = ${name}_->sym_sizes().vec();
  sizes.insert(sizes.begin(), batch);
  *${name}_ = ${name}_->expand_symint(sizes);
}
