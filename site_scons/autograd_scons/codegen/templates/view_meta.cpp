
// The view in a functionalized program: forward replays it (or its copy,
// without reapplied views), reverse writes a mutated view into its base.
struct ${stem}_ViewMeta : public at::functionalization::ViewMeta {
  ${stem}_ViewMeta(bool has_symbolic_inputs, int64_t out_idx, bool reapply,
      at::functionalization::InverseReturnMode mode${ctor_params})
      : at::functionalization::ViewMeta(has_symbolic_inputs, /*is_multi_output=*/${multi_output},
                                        /*is_as_strided=*/false, out_idx),
        reapply_views(reapply), inverse_return_mode(mode)${ctor_inits} {}
  at::Tensor forward(const at::Tensor& base) override {
    return reapply_views ? ${stem}_view_op().call(base${members})${element}
                         : ${stem}_copy_op().call(base${members})${element};
  }
  at::Tensor reverse(const at::Tensor& base, const at::Tensor& mutated_view) override {
    return ${stem}_inverse(base, mutated_view, inverse_return_mode${index}${members});
  }
  ${to_out_index}
  bool reapply_views;
  at::functionalization::InverseReturnMode inverse_return_mode;
  ${member_decls}
};
