std::vector<at::Tensor> _copies;
for (const at::Tensor& _view : _view_op.call(${args})) {
  _copies.push_back(_view.clone(at::MemoryFormat::Contiguous));
}
return _copies;
