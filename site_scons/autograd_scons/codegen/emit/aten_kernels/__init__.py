"""A patch of the installed torch: the Autograd kernels of ATen's own ops
(aten_kernel.py, aten_forward_ad.py), as libtorch's VariableType has them,
and the patch's definitions of libtorch's local helpers (locals_cpp.py)."""
