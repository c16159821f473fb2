if (grad_fn) {
  ${history}_history(flatten_tensor_args( ${outs} ), grad_fn);
}
