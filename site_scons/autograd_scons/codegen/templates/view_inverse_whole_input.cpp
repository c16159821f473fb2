
// The view's inverse, for a view of all of its input: the declared inverse
// is a view of the mutated view, autograd's reverse view function as it is;
// functionalization writes back a copy of it (a graph output is then never a
// view of one of its buffers, as with ATen's views).
at::Tensor ${stem}_inverse(const at::Tensor& base, const at::Tensor& mutated_view,
    at::functionalization::InverseReturnMode mode${params}) {
  at::Tensor _inverse = ${inverse};
  return mode == at::functionalization::InverseReturnMode::AlwaysView
      ? _inverse : _inverse.clone(at::MemoryFormat::Contiguous);
}
