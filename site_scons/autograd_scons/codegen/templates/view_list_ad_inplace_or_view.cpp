
// Makes each result a view of `${base}` for autograd, as ATen's multi-output
// views (unbind): an in-place write to one of them is refused while it
// requires grad, since no one Node could rebase the others.
${ret} ${stem}_ad_inplace_or_view(${params}) {
  auto _tmp = ([&]() {
    at::AutoDispatchBelowADInplaceOrView guard;
    return ${stem}_view_op().call(${args});
  })();
  // (otherwise replayed by as_strided)
  const bool _replay = !${base}.unsafeGetTensorImpl()->support_as_strided() ||
                       ${base}.unsafeGetTensorImpl()->is_python_dispatch() ||
                       c10::AutogradState::get_tls_state().get_view_replay_enabled();
  for (size_t _i = 0; _i < _tmp.size(); ++_i) {
    const int64_t _view_idx = static_cast<int64_t>(_i);
    ${alias_check}
    std::unique_ptr<torch::autograd::ViewFunc> _view_func;
    std::function<at::Tensor(const at::Tensor&)> _rev_view_func;
    if (_replay) {
      _view_func = std::make_unique<${stem}_ViewFunc>(_view_idx${func_args});
      _rev_view_func = [${captures}, _view_idx](const at::Tensor& input_view) {
        return ${stem}_inverse(${base}, input_view, at::functionalization::InverseReturnMode::AlwaysView, _view_idx${inverse_args});
      };
    }
    _tmp[_i] = as_view(${base}, _tmp[_i], /*is_bw_differentiable=*/true, /*is_fw_differentiable=*/true,
                       std::move(_view_func), std::move(_rev_view_func),
                       c10::InferenceMode::is_enabled() ? CreationMeta::INFERENCE_MODE
                       : at::GradMode::is_enabled()    ? CreationMeta::MULTI_OUTPUT_NODE
                                                       : CreationMeta::NO_GRAD_MODE);
  }
  return _tmp;
}
