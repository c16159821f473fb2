"""One unit's files, whatever its kind: the one entry point from the engine
into emission (engine/units.py's Unit.render).  The unit's subject says
which emitter writes it:

    DifferentiabilityInfo   an autograd Function       functions/function_files.py
    KernelUnit              an extension op's TU       op_kernels/kernels.py
    AtenKernel              a patch's ATen op kernel   aten_kernels/aten_kernel.py
"""

from __future__ import annotations

from typing import Sequence, Union

from ..model.aten_op import AtenKernel
from ..model.autograd import DifferentiabilityInfo
from ..model.extension_op import KernelUnit
from .options import EmitOptions

# What a unit of generation is rendered from (engine/units.py).
Subject = Union[DifferentiabilityInfo, KernelUnit, AtenKernel]


def render_unit(subject: Subject, opts: EmitOptions, callees: Sequence[str] = (), *,
                own_class: bool = True) -> dict[str, str]:
    """{path below the output folder: text} of one unit.  `callees`: the
    stems of the extension ops its formulas call; `own_class`: a Function
    that is a patch's own class (in a patch, the bound ones)."""
    if isinstance(subject, DifferentiabilityInfo):
        from .functions.function_files import render_op
        return render_op(subject, opts, tuple(callees), own_class=own_class)
    if isinstance(subject, KernelUnit):
        from .op_kernels.kernels import render_kernel
        return render_kernel(subject, opts, tuple(callees))
    if isinstance(subject, AtenKernel):
        from .aten_kernels.aten_kernel import render_aten_kernel
        return render_aten_kernel(subject)
    raise TypeError(f"no emitter renders a {type(subject).__name__}")
