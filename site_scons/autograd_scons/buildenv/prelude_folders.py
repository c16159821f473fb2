"""Where the build environment keeps what builds share: the root of load()'s
build folders (`$AUTOGRAD_EXTENSIONS_DIR`) and the shared precompiled
prelude's folder below it, which environment.py gives the tool as
`$AUTOGRAD_PRELUDE_DIR` (what the prelude holds and how each compiler takes
it: tool/pch_compilers.py).
"""

from __future__ import annotations

import os


def extensions_root() -> str:
    """`$AUTOGRAD_EXTENSIONS_DIR`, else `$XDG_CACHE_HOME/autograd_extensions`,
    else `~/.cache/autograd_extensions`: load()'s build folders and the
    shared prelude."""
    return os.path.abspath(os.environ.get("AUTOGRAD_EXTENSIONS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "autograd_extensions"))


def default_folder() -> str:
    """`$AUTOGRAD_EXTENSIONS_DIR/_prelude` (load()'s root), for every entry point."""
    return os.path.join(extensions_root(), "_prelude")


def can_make(folder: str) -> bool:
    """Whether `folder` exists or this user can make it: its nearest
    existing ancestor is writable.  (A folder that exists and is not
    private is refused later, in one line: that is distrust, not this.)"""
    path = os.path.abspath(folder)
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return path == os.path.abspath(folder) or os.access(path, os.W_OK | os.X_OK)
