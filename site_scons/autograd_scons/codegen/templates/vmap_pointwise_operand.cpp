at::Tensor ${name}_ = ${name};
if (${name}_bdim) {
  ${name}_ = ${name}_.movedim(*${name}_bdim, 0);
  while (${name}_.dim() <= rank) {
    ${name}_ = ${name}_.unsqueeze(1);
  }
}
