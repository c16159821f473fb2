"""The helpers torch_helpers/ defines, read from its sources without
importing it (it imports torch; the generator may not): what the translator
takes as `helpers`, and the files a generated module copies beside itself.

The rules are the package's own (torch_helpers/__init__.py computes HELPERS
from the imported modules alike; a test keeps the two equal): each
module's public functions, its aliases of them (`to_args_sizes_symint =
to_args_sizes`), and the private names torch's formulas call
(`_to_copy_backward`, listed in the package's `_PRIVATE_HELPERS`), typed by
the package's `_RETURNS` ("Tensor" otherwise).
"""

from __future__ import annotations

import ast
import functools
import os

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_helpers")


def _literal(tree: ast.Module, name: str, default):
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and node.targets[0].id == name:
            return ast.literal_eval(node.value)
    return default


@functools.lru_cache(maxsize=None)
def helper_package() -> tuple[dict[str, str], dict[str, str]]:
    """({file name: source} of torch_helpers/, {helper name: the type it returns})."""
    sources = {}
    for name in sorted(os.listdir(FOLDER)):
        if name.endswith(".py"):
            with open(os.path.join(FOLDER, name), encoding="utf-8") as f:
                sources[name] = f.read()
    init = ast.parse(sources["__init__.py"], "__init__.py")
    private, returns = set(_literal(init, "_PRIVATE_HELPERS", ())), _literal(init, "_RETURNS", {})
    names: list[str] = []
    for name, text in sources.items():
        if name == "__init__.py":
            continue
        defined: set[str] = set()
        for node in ast.parse(text, name).body:
            if isinstance(node, ast.FunctionDef):
                defined.add(node.name)
                if not node.name.startswith("_") or node.name in private:
                    names.append(node.name)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in defined:
                names += [t.id for t in node.targets if isinstance(t, ast.Name) and not t.id.startswith("_")]
    return sources, {n: returns.get(n, "Tensor") for n in names}


def helper_types() -> dict[str, str]:
    """{helper name: the type it returns} (the translator's `helpers`)."""
    return dict(helper_package()[1])
