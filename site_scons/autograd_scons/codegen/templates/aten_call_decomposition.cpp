auto _tmp = ([&]() {
  if (${cond}) {
    // no forward formula: the op's TorchScript decomposition, where one is registered, as libtorch's kernel
    return impl::run_jit_decomposition_with_args_for_jvp<${ret}>("${name}", op, ks, ${names});
  } else {
    at::${guard} guard;
    return op.redispatch(ks & c10::after_autograd_keyset, ${args});
  }
})();
