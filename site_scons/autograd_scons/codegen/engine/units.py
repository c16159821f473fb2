"""The unit of generation: one typed record per thing the generator writes.

A unit is an autograd Function (`functions/<Op>.h` and `.cpp`) or, for a
native function outside `aten`, its registration and Autograd kernel
(`ops/<ns>_<op>.cpp`).  Everything downstream (keys, the manifest, the
compile layout, reports) goes by these records, never by the spelling of a
name.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from autograd_scons.base.errors import SpecError
from ..tree import FUNCTIONS, OPS

if TYPE_CHECKING:   # (the fast path of an update imports no emitter)
    from ..emit.options import EmitOptions
    from ..emit.render import Subject
    from ..model.autograd import DifferentiabilityInfo
    from ..model.native import NativeSpec

# Room under the usual 255-byte file-name limit for a suffix (`.cpp`, `.os`)
# and the writer's temporary (`.<name>.<pid>.tmp`).
MAX_STEM_BYTES = 200


class Kind(enum.Enum):
    FUNCTION = "function"
    KERNEL = "kernel"


_FOLDER = {Kind.FUNCTION: FUNCTIONS, Kind.KERNEL: OPS}


@dataclass(frozen=True)
class Unit:
    kind: Kind
    name: str      # what keys and reports say: `MulBackward0`, `myops::scale_`
    stem: str      # file name without suffix, unique (case-insensitively) per folder
    # DifferentiabilityInfo (FUNCTION); model.extension_op.KernelUnit or, in a
    # patch, model.aten_op.AtenKernel (KERNEL): emit/render.py renders each
    subject: Subject
    # Whether a FUNCTION gets Python bindings (emit/python_bindings/binding_units.py): as in
    # torch's build, the foreach Functions derived without an entry get none.
    bound: bool = True
    # The stems of the extension ops its formulas call (emit/op_kernels/callers.py):
    # their headers are included, so they are part of the key (keys.py).
    callees: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        return _FOLDER[self.kind]

    @property
    def source(self) -> str:
        """The unit's translation unit, relative to the output folder."""
        return f"{self.folder}/{self.stem}.cpp"

    def render(self, opts: EmitOptions) -> dict[str, str]:
        # The emitters load on the first render: the manifest fast path needs none.
        from ..emit.render import render_unit
        # (in a patch of libtorch's Functions, a bound Function is the patch's own class)
        return render_unit(self.subject, opts, self.callees, own_class=self.bound)

    @property
    def info(self) -> DifferentiabilityInfo:
        """A FUNCTION's info (its subject)."""
        from ..model.autograd import DifferentiabilityInfo
        if not isinstance(self.subject, DifferentiabilityInfo):
            raise TypeError(f"{self.name} is a {self.kind.value} unit, not a Function")
        return self.subject

    def where(self) -> tuple[Optional[str], Optional[int], str]:
        """(file, line, entry) to locate the unit in the specs."""
        from ..model.autograd import DifferentiabilityInfo
        s = self.subject
        if isinstance(s, DifferentiabilityInfo) and s.file:   # (a Function: its entry's line)
            return s.file, s.line or None, str(s.func.func)
        return s.func.file or None, s.func.line or None, str(s.func.func)


@dataclass(frozen=True)
class LoadedSpecs:
    """The specs' units, with the parsed native functions and infos they
    came from (a patch's ATen kernels are chosen from these: one parse)."""
    units: list[Unit]
    native: NativeSpec
    infos: list[DifferentiabilityInfo]


def load_model(native_functions: str, derivatives: str, tags: Optional[str] = None, *,
               kernels: bool = True, native_cache=None) -> LoadedSpecs:
    """The specs' units in emission order: the Functions (load order, then
    the derived foreach ones), then, with `kernels`, the op kernels.  Raises
    SpecError if two units would write the same file.  `native_cache`: see
    load_derivatives.load_specs."""
    # (imported here, as in Unit.render: the manifest fast path loads no parser or emitter)
    from ..parse.extension_ops import caller_table, callees, function_infos, kernel_units
    from ..parse.foreach import derive_foreach_infos
    from ..parse.load_derivatives import infos_from_specs, load_specs
    specs = load_specs(native_functions, derivatives, tags, native_cache)
    infos = infos_from_specs(specs)
    derived = function_infos(derive_foreach_infos(infos, specs.native))
    ops = kernel_units(specs.native, infos) if kernels else []
    table = caller_table(ops)   # (no callers without kernels: nothing to include)
    backward = lambda i: callees((d.formula for d in i.derivatives), table)  # noqa: E731
    units = [Unit(Kind.FUNCTION, i.function, i.function, i, callees=backward(i)) for i in function_infos(infos)]
    units += [Unit(Kind.FUNCTION, i.function, i.function, i, bound=False, callees=backward(i)) for i in derived]
    units += [Unit(Kind.KERNEL, k.op, k.stem, k, callees=callees(
        (d.formula for d in (k.info.forward_derivatives if k.info else ())), table)) for k in ops]
    check_file_names(units)
    return LoadedSpecs(units, specs.native, infos)


def load_units(native_functions: str, derivatives: str, tags: Optional[str] = None, *,
               kernels: bool = True, native_cache=None) -> list[Unit]:
    """load_model's units alone."""
    return load_model(native_functions, derivatives, tags, kernels=kernels, native_cache=native_cache).units


def check_file_names(units: list[Unit]) -> None:
    """Every unit's files must have a name of their own: not too long, and
    not the same as another's on a case-insensitive file system."""
    seen: dict[tuple[str, str], Unit] = {}
    for u in units:
        if len(u.stem.encode()) > MAX_STEM_BYTES:
            raise SpecError(f"name too long for a file name ({len(u.stem.encode())} bytes, at most "
                            f"{MAX_STEM_BYTES}): shorten it", *u.where())
        prev = seen.setdefault((u.folder, u.stem.lower()), u)
        if prev is not u:
            pf, pl, pe = prev.where()
            at = f"{pf}:{pl}" if pl else (pf or "<input>")
            raise SpecError(f"'{u.name}' and '{prev.name}' (from '{pe}' at {at}) would both be "
                            f"generated as {u.source}; rename one of them", *u.where())
