std::vector<at::Tensor> _out;
_out.reserve(_tmp.size());
for (size_t _i = 0; _i < _tmp.size(); ++_i) {
  _out.push_back(at::detail::make_tensor<at::FunctionalTensorWrapper>(
      _tmp[_i], at::functionalization::impl::unsafeGetFunctionalWrapper(${base}),
      _meta->to_out_index(static_cast<int64_t>(_i))));
}
return _out;
