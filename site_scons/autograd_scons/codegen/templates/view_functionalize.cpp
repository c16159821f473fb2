
// Functionalization (torch.compile, torch.export): the view of the unwrapped
// base, wrapped with a ViewMeta that shares the base's storage, through the
// wrapper's exported constructor (ATen's kernels call a helper libtorch does
// not export, which does the same).
${ret} ${stem}_functionalize(${params}) {
  if (!at::functionalization::impl::isFunctionalTensor(${base})) {
    at::AutoDispatchSkipFunctionalize guard;
    return ${stem}_view_op().call(${args});
  }
  const at::Tensor _base_value = at::functionalization::impl::from_functional_tensor(${base});
  const bool _reapply_views = at::functionalization::impl::getFunctionalizationReapplyViewsTLS();
  auto _tmp = ([&]() {
    at::AutoDispatchSkipFunctionalize guard;
    return _reapply_views ? ${stem}_view_op().call(${unwrapped_args})
                          : ${stem}_copy_op().call(${unwrapped_args});
  })();
  auto _meta = std::make_shared<${stem}_ViewMeta>(
      /*has_symbolic_inputs=*/false, /*out_idx=*/0, _reapply_views,
      _reapply_views ? at::functionalization::InverseReturnMode::ViewOrScatterInverse
                     : at::functionalization::InverseReturnMode::NeverView${meta_args});
  ${wrap}
}
