
// Makes the result a view of `${base}` for autograd: CopySlices for in-place
// writes to it, its grad_fn regenerated when the base changed, and the
// creation meta that refuses in-place writes to a view made under no_grad.
${ret} ${stem}_ad_inplace_or_view(${params}) {
  auto _tmp = ([&]() {
    at::AutoDispatchBelowADInplaceOrView guard;
    return ${stem}_view_op().call(${args});
  })();
  ${alias_check}
  std::unique_ptr<torch::autograd::ViewFunc> _view_func;
  std::function<at::Tensor(const at::Tensor&)> _rev_view_func;
  // (otherwise replayed by as_strided)
  if (!${base}.unsafeGetTensorImpl()->support_as_strided() || ${base}.unsafeGetTensorImpl()->is_python_dispatch() ||
      c10::AutogradState::get_tls_state().get_view_replay_enabled()) {
    _view_func = std::make_unique<${stem}_ViewFunc>(${func_args});
    _rev_view_func = [${captures}](const at::Tensor& input_view) {
      return ${stem}_inverse(${base}, input_view, at::functionalization::InverseReturnMode::AlwaysView${inverse_args});
    };
  }
  return as_view(${base}, _tmp, /*is_bw_differentiable=*/true, /*is_fw_differentiable=*/true,
                 std::move(_view_func), std::move(_rev_view_func),
                 c10::InferenceMode::is_enabled() ? CreationMeta::INFERENCE_MODE
                 : at::GradMode::is_enabled()    ? CreationMeta::DEFAULT
                                                 : CreationMeta::NO_GRAD_MODE);
}
