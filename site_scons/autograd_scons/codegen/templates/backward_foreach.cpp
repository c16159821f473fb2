if (needs_input_grad[/*${name}*/${i}]) {
  std::vector<Tensor> grad_result;
  grad_result.reserve(grads.size());
  for (const auto i : c10::irange(grads.size())) {
    if (grads[i].defined()) {
      grad_result.emplace_back(${formula});
    } else {
      grad_result.emplace_back(Tensor());
    }
  }
  copy_range(grad_inputs, ${name}_ix, grad_result);
}
