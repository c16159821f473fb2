"""Running with a patch of libtorch's Functions, and seeing it from inside.

    python -m autograd_scons run-patched DIR -- python train.py   # CMD with DIR's patch preloaded
    autograd_scons.patched_functions()    # {"SinBackward0", "aten::sin", ...} in effect here; set() without a patch

A patch works only when it is loaded before libtorch (LD_PRELOAD): libtorch
binds its vtables when it is loaded (torch_library.py).  `run-patched` puts
the library first in LD_PRELOAD, after checking that the folder was built
for the torch that this Python imports, and becomes CMD (exec: CMD's exit
status is its own).  Inside, each patched class checked at load that
libtorch's own vtable calls the patch (templates/patch_check.cpp); a patch
loaded too late says so on stderr as it loads, and `patched_functions()`
raises PatchNotInEffect.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

from autograd_scons.buildenv.published import read_own
from autograd_scons.buildenv.torch_flags import _torch_dir
from autograd_scons.torch_patch.build import LIBRARY
from autograd_scons.torch_patch.identity import TORCH_RECORD, PatchError, torch_identity


class PatchNotInEffect(PatchError):
    """A patch library is loaded in this process but libtorch does not call it."""


def preload_path(folder: str) -> str:
    """DIR's library, after checking that DIR was built for this Python's torch."""
    folder = os.path.abspath(folder)
    library = os.path.join(folder, LIBRARY)
    if not os.path.isfile(library):
        raise PatchError(f"run-patched: {folder} holds no patch (no {LIBRARY}: build one with "
                         f"`python -m autograd_scons patch-torch -o {folder}`, whose last run may have failed)")
    data = read_own(os.path.join(folder, TORCH_RECORD))
    try:
        built_for = json.loads(data) if data else None
    except ValueError:
        built_for = None
    here = torch_identity(_torch_dir())
    if built_for != here:
        what = f"torch {built_for.get('version')} at {built_for.get('root')}" if isinstance(built_for, dict) \
            else "an unknown torch"
        raise PatchError(f"run-patched: {folder} was built for {what}, not for the torch this Python imports "
                         f"({here['version']} at {here['root']}): run patch-torch again under this torch")
    return library


def run_patched(folder: str, command: list) -> int:
    """Become `command` with the patch of `folder` preloaded (only returns,
    with 127, when the command cannot be started)."""
    if not command:
        raise PatchError("run-patched: no command given (run-patched DIR -- CMD [ARGS...])")
    library = preload_path(folder)
    # Ours first: a preloaded library defining the same symbols later would lose to it anyway.
    before = os.environ.get("LD_PRELOAD", "")
    env = dict(os.environ, LD_PRELOAD=":".join([library] + ([before] if before else [])))
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(command[0], command, env)
    except OSError as e:
        print(f"run-patched: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
        return 127
    return 0  # (not reached)


def _loaded_patches() -> list:
    """The patch libraries mapped into this process (Linux's /proc)."""
    found = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.rstrip("\n").split(maxsplit=5)   # address perms offset device inode path
                path = fields[5] if len(fields) == 6 else ""
                if os.path.basename(path) == LIBRARY and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def patched_functions() -> frozenset:
    """The names of libtorch's Functions that a patch replaces in this
    process (its own classes too, by the same names), and of the ATen ops
    whose Autograd kernel it replaces (`aten::sin`, `aten::sin_`); empty
    without a patch.  Raises PatchNotInEffect when a patch is loaded but
    libtorch does not call its Functions (loaded after libtorch)."""
    names, idle = set(), []
    for path in _loaded_patches():
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        lib.autograd_scons_patch_count.restype = ctypes.c_size_t
        lib.autograd_scons_patch_name.restype = ctypes.c_char_p
        lib.autograd_scons_patch_name.argtypes = [ctypes.c_size_t]
        lib.autograd_scons_patch_in_effect.argtypes = [ctypes.c_size_t]
        for i in range(lib.autograd_scons_patch_count()):
            name = lib.autograd_scons_patch_name(i).decode()
            if lib.autograd_scons_patch_in_effect(i):
                names.add(name)
            else:
                idle.append(name)
    if idle:
        raise PatchNotInEffect(f"a patch of libtorch's Functions is loaded but not in effect for {len(idle)} of "
                               f"them ({', '.join(sorted(idle)[:3])}{', ...' if len(idle) > 3 else ''}): "
                               "libtorch was loaded before it; run the program under `python -m "
                               "autograd_scons run-patched DIR -- ...`")
    return frozenset(names)
