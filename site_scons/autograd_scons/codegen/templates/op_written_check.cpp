if (${present}) {
  check_inplace(${value}, _any_requires_grad);
  TORCH_CHECK(!(GradMode::is_enabled() && ${value}.requires_grad()), "${op}(): argument '${name}' is written by the op "
              "and gets no gradient (derivatives.yaml has no formula for a written argument), but it requires grad.");
}
