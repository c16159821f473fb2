"""Specs in, generated files out: the whole pipeline, without I/O on the output."""

from __future__ import annotations

from typing import Optional

from .api.autograd import DifferentiabilityInfo
from .emit.functions import op_infos, render_all
from .emit.options import EmitOptions
from .foreach import derive_foreach_infos
from .load_derivatives import infos_from_specs, load_specs


def load_op_infos(native_functions: str, derivatives: str,
                  tags: Optional[str] = None) -> list[DifferentiabilityInfo]:
    """Every info that becomes a Function class, derived foreach ones included."""
    specs = load_specs(native_functions, derivatives, tags)
    infos = infos_from_specs(specs)
    return op_infos(infos, derive_foreach_infos(infos, specs.native))


def load_units(native_functions: str, derivatives: str, tags: Optional[str] = None) -> list:
    """Every generated unit: the Function infos (as load_op_infos), then the
    op kernels of non-ATen native functions (emit/kernels.py)."""
    from .emit.kernels import kernel_units
    specs = load_specs(native_functions, derivatives, tags)
    infos = infos_from_specs(specs)
    return op_infos(infos, derive_foreach_infos(infos, specs.native)) + kernel_units(specs.native, infos)


def render_unit(unit, opts: EmitOptions) -> dict[str, str]:
    """A Function's or an op kernel's files."""
    from .emit.functions import render_op
    from .emit.kernels import KernelUnit, render_kernel
    if isinstance(unit, KernelUnit):
        return render_kernel(unit, opts) if opts.kernels else {}
    return render_op(unit, opts)


def generate_files(native_functions: str, derivatives: str, tags: Optional[str] = None,
                   opts: EmitOptions = EmitOptions()) -> dict[str, str]:
    """Relative path -> text of every generated file."""
    return render_all(load_op_infos(native_functions, derivatives, tags), opts)
