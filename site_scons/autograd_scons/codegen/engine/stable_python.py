"""The stable target's generated Python from a pair of yaml files: the
extension's units (units.py) rendered by emit/stable_python/, with the ATen
functions its formulas may call read from the installed torchgen's
native_functions.yaml (found without importing torch)."""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Optional

from autograd_scons.base.errors import SpecError

_PACKAGED = os.path.join("packaged", "ATen", "native", "native_functions.yaml")


@functools.lru_cache(maxsize=None)
def aten_callees(path: Optional[str] = None) -> dict:
    """codegen/formula's callee table of ATen's native functions: `path`, or
    the installed torchgen's copy."""
    from ..formula import callees
    from ..parse.native_functions import parse_native_functions
    from ..parse.yaml_io import read_text
    if path is None:
        spec = importlib.util.find_spec("torchgen")
        if spec is None or not spec.submodule_search_locations:
            raise SpecError("the stable target translates formulas against ATen's native_functions.yaml, which "
                            "ships with torch (torchgen/packaged): install torch, or name the file")
        path = os.path.join(list(spec.submodule_search_locations)[0], _PACKAGED)
    return callees(parse_native_functions(path, read_text(path), None).functions)


def render_stable_python(native_functions: str, derivatives: str, namespace: str,
                         aten_native_functions: Optional[str] = None,
                         python_helpers: Optional[str] = None) -> dict[str, str]:
    """{file name: text} of the generated module, its run-time support and,
    where a formula calls one of FunctionsManual's helpers, their Python
    package (a copy of codegen/formula/torch_helpers/: `stable_autograd_helpers/<file>`);
    where a formula calls one of the extension's own helpers, a copy of the
    module `python_helpers` (a path, as FunctionsRequest.python_helpers
    gives it: the module `stable_autograd_own_helpers`).  The module is read again
    at every call, so an edit of it is in the next output."""
    from ..emit.stable_python import render_module
    from ..formula.helper_names import helper_package
    from ..formula.user_helpers import read_helper_module
    from ..model.extension_op import KernelUnit
    from .units import load_units
    own = read_helper_module(python_helpers) if python_helpers is not None else None
    units = [u.subject for u in load_units(native_functions, derivatives) if isinstance(u.subject, KernelUnit)]
    return render_module(units, namespace, aten_callees(aten_native_functions), helper_package(), own)
