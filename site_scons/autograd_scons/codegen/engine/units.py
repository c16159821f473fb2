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
from typing import Any, Optional

from ..errors import SpecError
from ..tree import FUNCTIONS, OPS

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
    subject: Any   # DifferentiabilityInfo (FUNCTION) or model.extension_op.KernelUnit (KERNEL)
    # Whether a FUNCTION gets Python bindings (emit/python_bindings.py): as in
    # torch's build, the foreach Functions derived without an entry get none.
    bound: bool = True
    # The stems of the extension ops its formulas call (emit/callers.py):
    # their headers are included, so they are part of the key (keys.py).
    callees: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        return _FOLDER[self.kind]

    @property
    def source(self) -> str:
        """The unit's translation unit, relative to the output folder."""
        return f"{self.folder}/{self.stem}.cpp"

    def render(self, opts: Any) -> dict[str, str]:
        # The emitters load on the first render: the manifest fast path needs none.
        if self.kind is Kind.FUNCTION:
            from ..emit.functions import render_op
            # (in a patch of libtorch's Functions, a bound one is the patch's own class)
            return render_op(self.subject, opts, self.callees, own_class=self.bound)
        if hasattr(self.subject, "render"):   # (a patch's kernel of an ATen op: emit/aten_kernel.py)
            return self.subject.render(opts)
        from ..emit.kernels import render_kernel
        return render_kernel(self.subject, opts, self.callees)

    def where(self) -> tuple[Optional[str], Optional[int], str]:
        """(file, line, entry) to locate the unit in the specs."""
        s = self.subject
        info = s if self.kind is Kind.FUNCTION else s.info
        if self.kind is Kind.KERNEL or info is None or not info.file:
            return s.func.file or None, s.func.line or None, str(s.func.func)
        return info.file, info.line or None, str(info.func.func)


def load_units(native_functions: str, derivatives: str, tags: Optional[str] = None, *,
               kernels: bool = True, native_cache=None) -> list[Unit]:
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
    return units


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
