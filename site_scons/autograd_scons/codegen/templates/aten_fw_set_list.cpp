if (${out}_new_fw_grad_opt.has_value()) {
  auto ${out}_new_fw_grad = ${out}_new_fw_grad_opt.value();
  TORCH_INTERNAL_ASSERT(${out}.size() == ${out}_new_fw_grad.size());
  for (const auto i : c10::irange(${out}.size())) {
    if (${out}_new_fw_grad[i].defined() && ${out}[i].defined()) {
      ${out}[i]._set_fw_grad(${out}_new_fw_grad[i], /* level */ 0, /* is_inplace_op */ ${inplace});
    }
  }
}
