std::shared_ptr<at::functionalization::ViewMeta> to_out_index(int64_t out_idx) override {
  return std::make_shared<${stem}_ViewMeta>(has_symbolic_inputs, out_idx, reapply_views,
                                            inverse_return_mode${members});
}
