std::vector<at::Tensor> ${n}_new_fw_grad = ${formula};
for (size_t _i = 0; _i < ${n}_new_fw_grad.size(); ++_i) {
  if (${n}_new_fw_grad[_i].defined() && ${n}[_i].defined()) {
    ${n}[_i]._set_fw_grad(${n}_new_fw_grad[_i], /*level=*/0, /*is_inplace_op=*/false);
  }
}
