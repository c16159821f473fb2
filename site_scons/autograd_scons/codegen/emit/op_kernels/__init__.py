"""An extension op's TU: its registration (registration.py, dispatch.py),
its Autograd kernel (kernels.py, with forward_ad.py), views (views.py),
autocast and vmap (autocast.py, vmap.py, transform_block.py), the callers of
its ops (callers.py) and the kernels' declarations (signatures.py)."""
