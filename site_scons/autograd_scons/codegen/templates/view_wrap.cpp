return at::detail::make_tensor<at::FunctionalTensorWrapper>(
    _tmp, at::functionalization::impl::unsafeGetFunctionalWrapper(${base}), _meta);
