"""An extension's own formula helpers for the stable target: the Python
module the request names (`python_helpers="tests/fixtures/stable_python/sp_helpers.py"`,
the Python twin of the C++ target's `includes=` headers), read statically.

    module = read_helper_module("tests/fixtures/stable_python/sp_helpers.py")
    module.types        # {"reduce_to": "Tensor", "reduce_as": "Tensor", "add_products": "Tensor"}

The generator never imports it (it is the user's code, and imports torch):
the functions a formula may call are its top-level `def`s, read with `ast`,
each typed by its return annotation where that names a type the translator
knows (`-> int`, `-> List[int]`, `-> torch.Tensor`), "Tensor" where it has
none.  The generated module imports a verbatim copy of it placed beside
itself, so the copy's line numbers are the file's own in a traceback.

Refused, in one line naming the file and line: a file that cannot be read,
a syntax error, a relative import (the copy has no package around it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from autograd_scons.base.errors import SpecError
from .names import UNKNOWN

# Return annotations -> the translator's vocabulary (names.py).
_ANNOTATIONS = {"Tensor": "Tensor", "torch.Tensor": "Tensor", "int": "int", "float": "float", "bool": "bool",
                "Optional[Tensor]": "Tensor?", "Optional[torch.Tensor]": "Tensor?",
                "List[int]": "int[]", "list[int]": "int[]", "Sequence[int]": "int[]", "tuple[int, ...]": "int[]",
                "Tuple[int, ...]": "int[]", "torch.Size": "int[]", "List[Tensor]": "Tensor[]",
                "list[Tensor]": "Tensor[]", "List[torch.Tensor]": "Tensor[]", "list[torch.Tensor]": "Tensor[]",
                "None": "None"}


@dataclass(frozen=True)
class HelperModule:
    """The named module: its path as given (what errors name), its text
    (copied beside the generated module), and its functions."""
    path: str
    source: str
    functions: tuple[tuple[str, str], ...]   # (name, type returned), in file order

    @property
    def types(self) -> dict[str, str]:
        return dict(self.functions)


def _return_type(node: "ast.FunctionDef | ast.AsyncFunctionDef") -> str:
    if node.returns is None:
        return "Tensor"
    text = ast.unparse(node.returns).replace('"', "").replace("'", "")
    return _ANNOTATIONS.get(text.replace("typing.", ""), UNKNOWN)


def parse_helper_module(path: str, source: str) -> HelperModule:
    """`source` (the text of `path`) read as a helper module; SpecError
    located in it if it is not one."""
    try:
        tree = ast.parse(source, path)
    except SyntaxError as e:
        raise SpecError(f"the formulas' Python helper module (python_helpers=) has a syntax error: {e.msg}",
                        path, e.lineno) from None
    functions: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            raise SpecError(f"the formulas' Python helper module (python_helpers=) imports relatively "
                            f"('from {'.' * node.level}{node.module or ''} import ...'): it is copied beside the "
                            "generated module alone; import absolutely (torch) or define the function in it",
                            path, node.lineno)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = _return_type(node)
    return HelperModule(path, source, tuple(functions.items()))


def read_helper_module(path: str) -> HelperModule:
    """The file `path` as a helper module (SpecError if unreadable or not one)."""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise SpecError(f"cannot read the formulas' Python helper module (python_helpers=): {why}", path) from None
    return parse_helper_module(path, source)
