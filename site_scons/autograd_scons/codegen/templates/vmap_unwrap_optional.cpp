std::optional<at::Tensor> ${name}_value;
std::optional<int64_t> ${name}_bdim;
if (${name}.has_value()) {
  std::tie(${name}_value, ${name}_bdim) = at::functorch::unwrapTensorAtLevel(*${name}, cur_level);
}
