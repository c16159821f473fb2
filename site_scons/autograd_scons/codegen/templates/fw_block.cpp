if (_any_has_fw_grad) {
  ${body}
}
