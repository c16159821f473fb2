"""The modules `autograd_scons` had at its top before it became one package
(commit 8af3fec), still importable from there for a while:

    from autograd_scons import torch_flags, verified_cache   # docs/embedding.md's lines until then

gives `autograd_scons.buildenv.torch_flags` and `...verified_cache`, the
modules themselves, with one DeprecationWarning per old name and process
naming the new place.  The package's `__getattr__` asks here, so nothing is
imported until an old name is used, and no second name for a module enters
`sys.modules` (tests/package/test_one_package.py).  `import
autograd_scons.torch_flags` (a submodule import) is not served: the earlier
docs never wrote it.

The old names kept are those the docs of that time told users to import or
call: the helpers of a host SConstruct (`torch_flags`, `verified_cache`,
`autograd_stamp`, `cuda_flags`), the environment (`extension_env`), and
the machinery docs/load.md offered to other builds started from Python
(`folder_lock`, `scons_run`, `jit_load`).  `scons_run` was split since: its
old name answers with the runner's names and the stamp's.  The generator
was a top-level package `codegen`; it is `autograd_scons.codegen` now, and
a top-level `codegen` is deliberately not installed again (a name that
generic would shadow, or be shadowed by, other projects' packages).
"""

import importlib
import os
import sys
import types
from typing import Optional
import warnings

PACKAGE = "autograd_scons"

# old name -> the module(s) now holding what it held
MOVED = {
    "torch_flags": ("buildenv.torch_flags",),
    "verified_cache": ("buildenv.verified_cache",),
    "cuda_flags": ("buildenv.cuda_flags",),
    "autograd_stamp": ("tool.library_noop",),
    "extension_env": ("buildenv.environment",),
    "folder_lock": ("base.lock",),
    "scons_run": ("buildenv.runner", "buildenv.up_to_date"),
    "jit_load": ("jit.loader",),
}

_warned: set = set()


def new_place(old: str) -> str:
    return " and ".join(f"{PACKAGE}.{home}" for home in MOVED[old])


def resolve(old: str):
    """The module an old name now is (a view of both, for one that was
    split), after its DeprecationWarning (once per process)."""
    homes = [importlib.import_module(f"{PACKAGE}.{home}") for home in MOVED[old]]
    if old not in _warned:
        _warned.add(old)
        where = new_place(old)
        how = f"from {where.rsplit('.', 1)[0]} import {where.rsplit('.', 1)[1]}" if len(homes) == 1 else \
            "import its names from there"
        warnings.warn(f"{PACKAGE}.{old} moved to {where}: `{how}` (the old name will be removed)",
                      DeprecationWarning, stacklevel=_importer_level())
    return homes[0] if len(homes) == 1 else _joined(old, homes)


def _joined(old: str, homes: list) -> types.ModuleType:
    view = types.ModuleType(f"{PACKAGE}.{old}", f"The old {PACKAGE}.{old}: now {new_place(old)}.")

    def lookup(name):
        for module in homes:
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"{PACKAGE}.{old} (now {new_place(old)}) has no attribute {name!r}")

    setattr(view, "__getattr__", lookup)   # a module's __getattr__ (PEP 562)
    return view


def _importer_level() -> int:
    """warnings' stacklevel of the line that used the old name: the first
    frame above this module, the package's __getattr__ and the import
    machinery (`from autograd_scons import x` reaches __getattr__ from
    importlib's _handle_fromlist first; warnings itself skips importlib's
    frames when it counts, so they are not counted here)."""
    level = 2
    frame: Optional[types.FrameType] = sys._getframe(2)   # 1: resolve(); 2: its caller
    package_init = sys.modules[PACKAGE].__file__
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<frozen importlib"):
            if name not in (__file__, package_init):
                break
            level += 1
        frame = frame.f_back
    return level


# The SCons tools a checkout held in site_scons/site_tools/ until the package's
# folders became its import names (commit acac559): the docs of that time
# loaded them by `toolpath=[<checkout>/site_scons/site_tools]`.  That folder
# keeps a file per tool which hands SCons the package's tool (old_tool()).
OLD_TOOLS = {"autograd_functions": "tool.builders", "nvcc": "tool.cuda_objects"}
NEW_TOOL_FORM = 'import autograd_scons; env.Tool("{tool}", toolpath=[autograd_scons.TOOLPATH])'


def old_tool(tool: str):
    """`generate` and `exists` for SCons from the old site_tools/ file of
    `tool`: the package's own, with one DeprecationWarning per process
    naming the new form (warned when the tool is applied, from the
    SConstruct's line that asked for it)."""
    module = importlib.import_module(f"{PACKAGE}.{OLD_TOOLS[tool]}")

    def generate(env, *args, **kw):
        key = f"site_tools/{tool}"
        if key not in _warned:
            _warned.add(key)
            warnings.warn(f"the tool {tool!r} from a checkout's site_scons/site_tools moved into the package: "
                          f"`{NEW_TOOL_FORM.format(tool=tool)}` (the old folder will be removed)",
                          DeprecationWarning, stacklevel=_sconscript_level())
        return module.generate(env, *args, **kw)

    return generate, module.exists


# The helpers a checkout's site_scons/ held as top-level modules before the
# package (commit 8af3fec): `sys.path.insert(0, AGF + "/site_scons"); import
# torch_flags, verified_cache` (docs/embedding.md), `cuda_flags` (docs/cuda.md).
OLD_TOP_LEVEL = ("torch_flags", "verified_cache", "cuda_flags")


def old_top_level(old: str) -> types.ModuleType:
    """The module a top-level helper of a checkout's site_scons/ now is,
    after one DeprecationWarning naming its import from the package."""
    module = importlib.import_module(f"{PACKAGE}.{MOVED[old][0]}")
    key = f"top-level/{old}"
    if key not in _warned:
        _warned.add(key)
        home, name = MOVED[old][0].rsplit(".", 1)
        warnings.warn(f"the top-level module {old!r} of a checkout's site_scons/ moved into the package: "
                      f"`from {PACKAGE}.{home} import {name}` (the old name will be removed)",
                      DeprecationWarning, stacklevel=_sconscript_level())
    return module


def _sconscript_level() -> int:
    """warnings' stacklevel of the first frame outside this module, the old
    files in site_scons/, SCons's own modules and the import machinery: the
    SConstruct's line that used the old form."""
    level = 1
    frame: Optional[types.FrameType] = sys._getframe(1)
    site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<frozen importlib"):
            mine = name == __file__ or os.path.dirname(name) in (site, os.path.join(site, "site_tools"))
            if not mine and os.sep + "SCons" + os.sep not in name:
                break
            level += 1
        frame = frame.f_back
    return level
