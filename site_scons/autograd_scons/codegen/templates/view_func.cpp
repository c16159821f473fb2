
// The view replayed on another base (autograd's view replay: AOTAutograd,
// tensors without strides), with the view's arguments held by value.
struct ${stem}_ViewFunc : public torch::autograd::ViewFunc {
  explicit ${stem}_ViewFunc(${ctor_params})${ctor_inits} {}
  at::Tensor operator()(const at::Tensor& input_base) const override {
    return ${stem}_view_op().call(input_base${members})${element};
  }
  std::unique_ptr<torch::autograd::ViewFunc> clone_and_set(
      std::optional<std::vector<c10::SymInt>> = std::nullopt,
      std::optional<std::vector<at::Tensor>> = std::nullopt) const override {
    return std::make_unique<${stem}_ViewFunc>(${ctor_args});
  }
  ${member_decls}
};
