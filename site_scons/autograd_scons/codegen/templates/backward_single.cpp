if (needs_input_grad[/*${name}*/${i}]) {
  auto grad_result = ${formula};
  copy_range(grad_inputs, ${name}_ix, grad_result);
}
