${results}
if (grad_fn) {
  ${set_history}
  ${save}
}
