${optional} ${res}_new_fw_grad_opt = ::std::nullopt;
if (${cond}) {
  ${unpacked}
  ${res}_new_fw_grad_opt = ${formula};
}
