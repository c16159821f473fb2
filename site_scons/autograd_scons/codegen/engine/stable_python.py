"""The stable target's generated Python from a pair of yaml files: the
extension's units (units.py) rendered by emit/stable_python/, with the ATen
functions its formulas may call read from the installed torchgen's
native_functions.yaml (found without importing torch)."""

from __future__ import annotations

import ast
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


@functools.lru_cache(maxsize=None)
def torch_helpers() -> tuple[dict[str, str], dict[str, str]]:
    """({file name: source} of the package codegen/formula/torch_helpers/,
    its HELPERS: name -> the type it returns), without importing it (it
    imports torch, which the generator may not): the public functions each
    module defines, typed by the package's `_RETURNS` ("Tensor" otherwise),
    as the package computes HELPERS when imported."""
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "formula", "torch_helpers")
    sources, names, returns = {}, [], {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            sources[name] = f.read()
        for node in ast.parse(sources[name], name).body:
            if name != "__init__.py" and isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                names.append(node.name)
            if name != "__init__.py" and isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                    and node.value.id in names:   # an alias of a helper (`to_args_sizes_symint = to_args_sizes`)
                names += [t.id for t in node.targets if isinstance(t, ast.Name) and not t.id.startswith("_")]
            if name == "__init__.py" and isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "_RETURNS":
                returns = ast.literal_eval(node.value)
    return sources, {n: returns.get(n, "Tensor") for n in names}


def render_stable_python(native_functions: str, derivatives: str, namespace: str,
                         aten_native_functions: Optional[str] = None) -> dict[str, str]:
    """{file name: text} of the generated module, its run-time support and,
    where a formula calls one of FunctionsManual's helpers, their Python
    package (a copy of codegen/formula/torch_helpers/: `stable_autograd_helpers/<file>`)."""
    from ..emit.stable_python import render_module
    from .units import Kind, load_units
    units = [u.subject for u in load_units(native_functions, derivatives) if u.kind is Kind.KERNEL]
    return render_module(units, namespace, aten_callees(aten_native_functions), torch_helpers())
