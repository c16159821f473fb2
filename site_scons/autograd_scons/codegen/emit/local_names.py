"""Names the generated code declares beside an op's own names.

A Function's backward takes each saved value as a parameter named after it
(so that its formula can use the name), and an Autograd kernel takes each
argument of the op under its schema name; the code around them declares its
own variables (templates/function.cpp, op_*.cpp).  An argument or output
whose name is one of those would be declared twice: a C++ error inside
generated code, after a long build.  It is refused instead, in one located
line that names the clash and the rename (grad_usage.py does the same for
the words the formulas themselves reserve).
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..model.autograd import DifferentiabilityInfo
from autograd_scons.base.errors import SpecError

# templates/function.cpp, backward_single.cpp, emit/functions/backward.py, emit/functions/function_files.py
FUNCTION_LOCALS = frozenset({
    "gen", "grad_inputs", "any_grad_defined", "grad_result", "needs_input_grad", "args", "packed_args",
    "saved", "lock", "called", "compiled_autograd_bind_key", "output_result"})
# templates/op_grad_fn.cpp, op_lookup.cpp, op_call_result.cpp, emit/op_kernels/forward_ad.py
KERNEL_LOCALS = frozenset({"op", "grad_fn", "_result", "_any_requires_grad", "_any_has_fw_grad"})


def _clash(names: Iterable[str], taken: frozenset) -> Optional[str]:
    return next((n for n in names if n in taken), None)


def _refusal(name: str, where: str) -> str:
    return (f"'{name}' is also the name of a variable of the generated {where}: rename it, e.g. to "
            f"'{name}_arg', in its schema (and in its derivatives entry)")


def check_function_names(info: DifferentiabilityInfo, saved: Iterable[str]) -> None:
    """The Function's saved values against its backward's own variables (and
    the slot range `<input>_ix` of each differentiable input)."""
    taken = FUNCTION_LOCALS | {f"{b.name}_ix" for b in info.args_with_derivatives}
    clash = _clash(saved, taken)
    if clash is not None:
        raise SpecError(_refusal(clash, "Function"), info.file or None, info.line or None, str(info.func.func))


def check_kernel_names(func, arguments: Iterable[str]) -> None:
    """An Autograd kernel's parameters against its own variables."""
    clash = _clash(arguments, KERNEL_LOCALS)
    if clash is not None:
        raise SpecError(_refusal(clash, "Autograd kernel"), func.file or None, func.line or None,
                        f"{func.namespace}::{func.func}")
