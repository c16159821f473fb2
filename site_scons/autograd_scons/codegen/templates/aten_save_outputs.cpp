if (grad_fn) {
  ${save}
}
