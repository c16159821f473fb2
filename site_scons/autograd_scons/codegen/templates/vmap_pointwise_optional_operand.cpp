std::optional<at::Tensor> ${name}_ = ${name};
if (${name}_.has_value() && ${name}_bdim) {
  *${name}_ = ${name}_->movedim(*${name}_bdim, 0);
  while (${name}_->dim() <= rank) {
    *${name}_ = ${name}_->unsqueeze(1);
  }
}
