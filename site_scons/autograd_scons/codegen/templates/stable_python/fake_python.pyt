torch.library.register_fake("${qualname}", _rt.function("${function}"), lib=_lib)
