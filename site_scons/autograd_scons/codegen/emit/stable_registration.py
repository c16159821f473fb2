"""The stable target's C++: the kernels' declarations in stable types
(`stable/kernels.h`, what `signatures --stable` prints) and one registration
TU (`stable/registration.cpp`): `STABLE_TORCH_LIBRARY` with every schema of
native_functions.yaml, and a `STABLE_TORCH_LIBRARY_IMPL` block per dispatch
key binding each `<ns>::native` kernel through `TORCH_BOX`.

No autograd Function and no Autograd kernel is generated for this target:
its autograd is the Python module codegen/emit/stable_python/ writes.  Both
files depend on native_functions.yaml alone, so a formula edit leaves their
bytes, and so every object, as they are.
"""

from __future__ import annotations

from typing import Sequence

from autograd_scons.base.errors import FormulaError, SpecError
from ..model.extension_op import KernelUnit
from ..model.stable import stable_parameter_type, stable_return_type
from ..templates import load, string_literal
from ..tree import BANNER


def _located(unit: KernelUnit, e: Exception) -> SpecError:
    f = unit.func
    return SpecError(f"{e} (the stable target)", getattr(f, "file", None), getattr(f, "line", None),
                     f"{f.namespace}::{f.func.name}")


def stable_declaration(unit: KernelUnit, name: str) -> str:
    """`ret name(params);` of one kernel of `unit`, in stable types."""
    fs = unit.func.func
    try:
        params = ", ".join(f"{stable_parameter_type(a)} {a.name}" for a in fs.schema_order_arguments())
        ret = stable_return_type(fs.returns)
    except FormulaError as e:
        raise _located(unit, e) from None
    return f"{ret} {name}({params});"


def _checked(units: Sequence[KernelUnit]) -> list[KernelUnit]:
    """The units, each refused at its line where the stable target cannot
    build it: a view (no views), a type without a stable conversion.  (The
    parser allows the dispatch keys STABLE_TORCH_LIBRARY_IMPL takes; the
    Autograd key is the Python module's: register_autograd.)"""
    for u in units:
        if u.copy_of is not None or u.func.view is not None:
            raise _located(u, FormulaError("a view op has no stable-ABI kernel here: its output would "
                                           "alias its input, which a Python autograd cannot track"))
        stable_declaration(u, "kernel")  # (its types: refused here, not in the C++ compiler)
    return list(units)


def render_kernels_header(units: Sequence[KernelUnit], yaml_name: str) -> str:
    blocks: list[str] = []
    for u in _checked(units):
        d = u.func.dispatch
        if d is None:
            continue
        blocks += load("stable_kernels_block.h").lines(  # (types checked above)
            op=u.op, keys=", ".join(k for k, _ in d.kernels), ns=u.func.namespace,
            declarations=[stable_declaration(u, name) for name in d.names()])
    return load("stable_kernels.h").substitute(yaml=yaml_name, blocks=blocks)


def render_registration(units: Sequence[KernelUnit], yaml_name: str, python_module: str) -> str:
    units = _checked(units)
    namespaces = list(dict.fromkeys(u.func.namespace for u in units))
    libraries: list[str] = []
    for ns in namespaces:
        mine = [u for u in units if u.func.namespace == ns]
        libraries += load("stable_library_def.cpp").lines(
            ns=ns, defs=[f"m.def({string_literal(str(u.func.func))});" for u in mine])
        by_key: dict[str, list[str]] = {}
        for u in mine:
            for key, name in (u.func.dispatch.kernels if u.func.dispatch is not None else ()):
                by_key.setdefault(key, []).append(
                    f"m.impl({string_literal(str(u.func.func.name))}, TORCH_BOX(&{ns}::native::{name}));")
        for key, impls in by_key.items():
            libraries += [""] + load("stable_library_impl.cpp").lines(ns=ns, key=key, impls=impls)
    return load("stable_registration.cpp").substitute(
        banner=BANNER, yaml=yaml_name, python_module=python_module, kernels_header="kernels.h",
        libraries=libraries)
