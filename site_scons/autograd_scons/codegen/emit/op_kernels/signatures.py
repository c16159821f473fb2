"""`python -m autograd_scons signatures YAML`: the C++ declaration of every
kernel a native_functions.yaml names under `dispatch:` (and every batch rule
under `vmap: {rule: NAME}`), exactly as the
generated `ops/<ns>_<op>.h` declares it, so that a kernel can be written
without generating a tree and reading it.  The text is a header that
compiles alone (templates/signatures.h): one namespace block per op.
"""

from __future__ import annotations

from typing import Sequence

from ...model.extension_op import KernelUnit, dispatcher_signature, parameters_of
from ...templates import load
from ...tree import op_file
from .dispatch import declarations
from .views import inverse_declaration
from .vmap import rule_declaration


def kernel_signatures(units: Sequence[KernelUnit], yaml_name: str) -> str:
    blocks: list[str] = []
    for unit in units:
        f = unit.func
        rule = rule_declaration(f, f.vmap) if f.vmap is not None else []
        if f.dispatch is None and not rule:   # its kernels are registered by hand
            continue
        ret, types = dispatcher_signature(f)
        inverse = inverse_declaration(f, f.view, types) if f.view is not None else None
        kernels = declarations(f, f.dispatch, (ret, parameters_of(f, types)), inverse) if f.dispatch else []
        blocks += [f"// {f.namespace}::{f.func}: in {op_file(unit.stem, '.h')}", *kernels, *rule, ""]
    return load("signatures.h").substitute(yaml=yaml_name, type_includes=load("kernel_types.h").lines(),
                                           blocks=blocks)
