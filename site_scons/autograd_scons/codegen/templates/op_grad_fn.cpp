auto _any_requires_grad = compute_requires_grad(${differentiable});
(void)_any_requires_grad;
${inplace_check}
${input_checks}
${options}
c10::intrusive_ptr<${function}> grad_fn;
if (_any_requires_grad) {
  grad_fn = c10::make_intrusive<${function}>();
  grad_fn->set_next_edges(collect_next_edges(${differentiable}));
  ${save}
}
