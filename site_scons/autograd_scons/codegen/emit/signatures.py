"""`python -m autograd_scons signatures YAML`: the C++ declaration of every
kernel a native_functions.yaml names under `dispatch:`, exactly as the
generated `ops/<ns>_<op>.h` declares it, so that a kernel can be written
without generating a tree and reading it.  The text is a header that
compiles alone (templates/signatures.h): one namespace block per op.
"""

from __future__ import annotations

from ..parse.native_functions import NativeSpec
from ..templates import load
from ..tree import op_file
from .dispatch import declarations, dispatch_of
from .kernels import kernel_units, parameters_of, signature_of
from .views import inverse_declaration, view_of


def kernel_signatures(native: NativeSpec, yaml_name: str) -> str:
    blocks: list[str] = []
    for unit in kernel_units(native, ()):
        f = unit.func
        dispatch = dispatch_of(f)
        if dispatch is None:   # its kernels are registered by hand
            continue
        view = view_of(f, dispatch, None, formulas=False)
        ret, types = signature_of(f)
        inverse = inverse_declaration(f, view, types) if view is not None else None
        blocks += [f"// {f.namespace}::{f.func}: in {op_file(unit.stem, '.h')}",
                   *declarations(f, dispatch, (ret, parameters_of(f, types)), inverse), ""]
    return load("signatures.h").substitute(yaml=yaml_name, type_includes=load("kernel_types.h").lines(),
                                           blocks=blocks)
