at::Tensor original_self_p;
if (_any_has_fw_grad) {
  original_self_p = self._fw_primal(0).clone();
}
