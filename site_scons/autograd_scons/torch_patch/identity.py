"""Which torch a patch is for, told without importing torch: its folder,
its version (torch/version.py) and its core library (size and GNU build id).

A patch defines members of one libtorch build's classes: run under another
torch it would replace that torch's Functions with code compiled against
other declarations.  So the folder records the identity it was built for
(TORCH_RECORD); `patch-torch` refuses to build there for another torch,
and `run-patched` refuses to run a program with it under another torch.
"""

from __future__ import annotations

import ast
import os

from autograd_scons.base.errors import Error
from autograd_scons.torch_patch import torch_library

TORCH_RECORD = "torch.json"


class PatchError(Error, RuntimeError):
    """A patch that cannot be built, run or trusted: one line."""


def _version(root: str) -> str:
    try:
        with open(os.path.join(root, "version.py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return "?"
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return "?"
            return value if isinstance(value, str) else "?"
    return "?"


def torch_identity(root: str) -> dict:
    """{root, version, library: [size, build id]} of the torch in `root`."""
    library = torch_library.library_path(root)
    try:
        size = os.stat(library).st_size
        build_id = torch_library.read_build_id(library)
    except (OSError, torch_library.ElfError) as e:
        raise PatchError(f"{library}: {getattr(e, 'strerror', None) or e}: not a torch whose Functions can "
                         "be patched") from None
    return {"root": os.path.realpath(root), "version": _version(root), "library": [size, build_id]}

