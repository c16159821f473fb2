torch.library.register_vmap("${qualname}", ${rule}, lib=_lib)
