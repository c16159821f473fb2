if (compute_requires_grad(${args})) {
  TORCH_CHECK(false, "${op}(): ${what}, but one of the arguments requires grad.");
}
