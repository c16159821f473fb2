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
def torch_helpers() -> tuple[str, dict[str, str]]:
    """(the source of codegen/formula/torch_helpers.py, its HELPERS: name ->
    the type it returns), without importing it (it imports torch, which the
    generator may not): its `_TENSOR` and `HELPERS` assignments, plain
    expressions of literals, evaluated alone."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "formula", "torch_helpers.py")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source, path)
    wanted = [n for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
              and isinstance(n.targets[0], ast.Name) and n.targets[0].id in ("_TENSOR", "HELPERS")]
    names: dict = {"__builtins__": {}}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), path, "exec"), names)
    return source, dict(names["HELPERS"])


def render_stable_python(native_functions: str, derivatives: str, namespace: str,
                         aten_native_functions: Optional[str] = None) -> dict[str, str]:
    """{file name: text} of the generated module, its run-time support and,
    where a formula calls one of FunctionsManual's helpers, their Python
    module (a copy of codegen/formula/torch_helpers.py)."""
    from ..emit.stable_python import render_module
    from .units import Kind, load_units
    units = [u.subject for u in load_units(native_functions, derivatives) if u.kind is Kind.KERNEL]
    source, helpers = torch_helpers()
    return render_module(units, namespace, aten_callees(aten_native_functions), (source, helpers))
