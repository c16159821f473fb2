increment_version(self);
if (grad_fn) {
  rebase_history(flatten_tensor_args(self), grad_fn);
  ${save}
}
