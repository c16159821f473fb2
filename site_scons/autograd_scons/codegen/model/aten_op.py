"""One ATen op's Autograd kernel in a patch of the installed torch
(`patch-torch --kernels`): which op, the info that differentiates it, and
the Function class it creates.  engine/patch_kernels.py makes these;
emit/aten_kernels/aten_kernel.py renders one."""

from __future__ import annotations

from dataclasses import dataclass

from .autograd import DifferentiabilityInfo
from .native import NativeFunction, OpUnitNames

# The namespace of the patch's own kernels (and Functions: emit/functions/function_files.py).
OWN_NAMESPACE = "torch::autograd::generated::autograd_scons_patch"
LIBTORCH_FUNCTIONS_H = "<torch/csrc/autograd/generated/Functions.h>"


@dataclass(frozen=True)
class AtenKernel(OpUnitNames):
    """One ATen op's Autograd kernel, and the Function it creates."""
    func: NativeFunction
    info: DifferentiabilityInfo    # its entry's, or its functional twin's (`exact` False)
    exact: bool
    function_class: str            # qualified: libtorch's, or the patch's own (OWN_NAMESPACE)
    class_header: str              # the include that declares it
    complex_ok: bool               # torch differentiates the op's complex outputs

    overload_sep = "_"   # (a class attribute, not a field: ATen's own names never need `__`)

    @property
    def entry(self) -> dict:
        return self.info.entry
