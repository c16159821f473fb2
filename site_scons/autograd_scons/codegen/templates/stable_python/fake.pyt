

@torch.library.register_fake("${qualname}", lib=_lib)
def _${stem}_fake(${signature}):
    return ${value}


