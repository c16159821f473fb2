// ${op} under vmap, registered for FuncTorchBatched as torchgen's plumbing is
// for ATen's ops: the tensors batched at the current level unwrapped, the
// batch rule called (${rule_says}), its results batched again at that level.
${ret} ${name}(${params}) {
  c10::impl::ExcludeDispatchKeyGuard guard(c10::DispatchKey::FuncTorchBatched);
  const auto maybe_layer = at::functorch::maybeCurrentDynamicLayer();
  TORCH_CHECK(maybe_layer.has_value(), "${op}: a batched tensor reached it outside of its vmap (it escaped the "
              "function that vmap ran)");
  const int64_t cur_level = maybe_layer->layerId();
  if (${none_batched}) {
    ${lookup}
    return op.call(${args});
  }
  ${unwraps}
  ${call_rule}
}
