auto _tmp = ([&]() {
  at::${guard} guard;
  return op.redispatch(ks & c10::after_autograd_keyset, ${args});
})();
