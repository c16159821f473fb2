"""What the caller chooses about the generated C++."""

from __future__ import annotations

from dataclasses import dataclass

# The backward helpers PyTorch's own derivatives.yaml formulas call
# (`handle_r_to_c`, `not_implemented`, ... in `details::`). Pass this as
# `includes` when generating from torch's specs; a user's own specs name
# their own helper headers instead.
TORCH_MANUAL_INCLUDES: tuple[str, ...] = ("torch/csrc/autograd/FunctionsManual.h",)


@dataclass(frozen=True)
class EmitOptions:
    # Our classes must not live in libtorch's `torch::autograd::generated`,
    # whose classes an extension would otherwise redefine.
    namespace: str = "autograd_ext::generated"
    # Extra headers for the formulas' helpers, included (in this order) by
    # every definition TU through the shared definitions prelude.
    includes: tuple[str, ...] = ()
    # 0: per-op TUs only; N > 0: also N unity bucket TUs.
    unity: int = 0
