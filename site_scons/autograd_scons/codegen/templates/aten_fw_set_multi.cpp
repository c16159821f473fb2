if (${all}_new_fw_grad_opt.has_value() && std::get<${index}>(${all}_new_fw_grad_opt.value()).defined()
    && ${out}.defined()) {
  ${out}._set_fw_grad(std::get<${index}>(${all}_new_fw_grad_opt.value()), /* level */ 0, /* is_inplace_op */ false);
}
