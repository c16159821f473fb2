c10::intrusive_ptr<${function}> grad_fn;
if (_any_requires_grad) {
  ${bind_python}
  grad_fn = c10::make_intrusive<${function}>();
  grad_fn->set_next_edges(collect_next_edges( ${args} ));
  ${save}
}
