{
  at::${guard} guard;
  op.redispatch(ks & c10::after_autograd_keyset, ${args});
}
