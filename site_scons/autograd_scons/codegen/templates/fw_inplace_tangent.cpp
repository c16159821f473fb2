self_new_fw_grad = self_t_raw.defined() ? self_t_raw.copy_(self_new_fw_grad) : self_new_fw_grad;
if (self_new_fw_grad.defined()) {
  self._set_fw_grad(self_new_fw_grad, /*level=*/0, /*is_inplace_op=*/true);
}
