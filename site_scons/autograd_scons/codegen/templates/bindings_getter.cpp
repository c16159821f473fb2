PyObject* ${getter}(THPCppFunction* self) {
  const auto& node = *static_cast<${op}*>(self->cdata.get());
  ${body}
}
