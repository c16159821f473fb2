"""The editable install (PEP 660) of an extension project: importing the
package rebuilds it first, incrementally, as meson-python's editable
installs do.

The editable wheel (build_meta.build_editable) holds three files: a `.pth`
that imports `_<package>_editable`, a module of constant source, which
calls `install_file()`: it reads the project's folder, build folder and
SCons arguments from `_<package>_editable.json` beside it (data: no path
is ever pasted into Python source) and calls `install()`.  `install` puts an
`EditableFinder` first on `sys.meta_path`.  Its `find_spec` for the package
(only the top-level name) runs `rebuild()` once per interpreter, then gives
the package from the project's folder, with the build folder's copy of the
package (the library) also on its `__path__`.

`rebuild` is the machinery `load()` uses (folder_lock, scons_run): the
stamp check first, which needs a stat per input and no SCons (a no-op
import costs that: docs/shipping.md), then, under the build folder's OS
lock, SCons.  A failed build raises ImportError with the first compiler
error and the log's path.  Every build sets $AUTOGRAD_SCONS_BUILDING, and
an import inside a build never starts another.
"""

import os
import sys

# Set in the environment of every build the backend or an editable import
# starts: an import inside a build never starts another one.
BUILDING_ENV = "AUTOGRAD_SCONS_BUILDING"
# The record of the inputs of the last build an editable import checked.
STAMP = ".editable_stamp.json"
# (build_meta, with its archive modules, is imported only to build: the
# .pth imports this module at every interpreter start.)


def stamp_key(args):
    """What besides the inputs decides the build: the arguments, and the
    torch the library links (its headers are not among the inputs)."""
    import importlib.util
    from . import torch_flags
    spec = importlib.util.find_spec("torch")
    root = list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None
    return {"args": list(args), "torch": torch_flags.torch_stamp(root) if root else None}


def rebuild(project, build, args, label):
    """Bring `<project>/<build>` up to date; ImportError when the build
    fails.  Returns True when SCons ran."""
    from . import scons_run
    folder = os.path.join(project, build)
    stamp = os.path.join(folder, STAMP)
    key = stamp_key(args)
    if scons_run.up_to_date(stamp, key):
        return False
    from .build_meta import BuildError, run_scons  # (only to build: ~20 ms of imports)
    from .folder_lock import BuildLock
    try:
        with BuildLock(folder, label=label):
            if scons_run.up_to_date(stamp, key):  # built meanwhile by whoever held the lock
                return False
            scons_run.clear_stamp(stamp)
            print(f"{label}: rebuilding {folder} (log: {os.path.join(folder, scons_run.LOG)})", file=sys.stderr)
            run_scons(project, build, args, os.path.join(folder, scons_run.LOG), quiet=True, label=label)
            scons_run.write_stamp(stamp, key, os.path.join(folder, scons_run.INPUTS))
    except (BuildError, OSError, TimeoutError) as e:
        raise ImportError(str(e) if str(e).startswith(label) else f"{label}: {e}") from None
    return True


class EditableFinder:
    """A meta path finder (not importlib.abc's subclass: importing that costs
    ~50 ms at every interpreter start)."""

    def __init__(self, package, project, build, args):
        self.package, self.project, self.build, self.args = package, project, build, list(args)
        self.checked = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.package:
            return None
        if not self.checked and not os.environ.get(BUILDING_ENV):
            self.checked = True  # once per interpreter, even when it fails
            rebuild(self.project, self.build, self.args, f"editable {self.package}")
        import importlib.util
        source = os.path.join(self.project, self.package)
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(source, "__init__.py"),
            submodule_search_locations=[source, os.path.join(self.project, self.build, self.package)])


def install(config):
    """Put the finder for `config` (package, project, build, args) first on
    sys.meta_path, once.  (Editable installs made before install_file
    existed call this with the config in their source.)"""
    if not any(isinstance(f, EditableFinder) and f.package == config["package"] for f in sys.meta_path):
        sys.meta_path.insert(0, EditableFinder(config["package"], config["project"], config["build"],
                                               config["args"]))


def config_path(hook_path):
    """The JSON file beside the hook module (`_<package>_editable.json`)."""
    return os.path.splitext(hook_path)[0] + ".json"


def install_file(hook_path):
    """Called by the hook module at interpreter start: install() the config
    in the JSON file beside it.  One that cannot be read is one line on
    stderr, and the package is not importable; the interpreter starts."""
    import json
    path = config_path(hook_path)
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        fields = ("package", "project", "build")
        if not (isinstance(config, dict) and all(isinstance(config.get(k), str) for k in fields)
                and isinstance(config.get("args"), list) and all(isinstance(a, str) for a in config["args"])):
            raise ValueError("not an editable install's config")
    except (OSError, ValueError) as e:
        print(f"autograd_scons: editable install {path}: {e}: not installed", file=sys.stderr)
        return
    install(config)


# The module the `.pth` imports: constant source, whatever the project.  A
# project's path never becomes Python source text (pasted into a string, a
# path holding """ would run code at every interpreter start, and one
# holding a backslash could stop every start with a SyntaxError): it is
# data, in the JSON file beside the module.
_HOOK = '''"""An editable install made by autograd_scons.build_meta, imported by
the .pth beside it at interpreter start.  What it installs (the package,
the project's folder, the build folder and SCons's arguments) is the JSON
file of the same name beside this module."""
try:
    from autograd_scons.editable import install_file
except ImportError:  # autograd-functions-scons uninstalled (or older): the package is not importable
    pass
else:
    install_file(__file__)
'''


def wheel_files(project, package, build, args):
    """{path in the wheel: bytes} of an editable wheel: the `.pth`, the hook
    module and its JSON config; the build has just run, so its stamp is
    written now and the first import is a no-op."""
    import json
    from . import scons_run
    if not package.isidentifier():  # it is a module name in the .pth's import line
        raise ValueError(f"{package!r} is not a Python identifier")
    folder = os.path.join(project, build)
    scons_run.write_stamp(os.path.join(folder, STAMP), stamp_key(args), os.path.join(folder, scons_run.INPUTS))
    config = {"package": package, "project": project, "build": build, "args": list(args)}
    module = f"_{package}_editable"
    # (json's default ASCII escapes give back any path exactly, one with
    # undecodable bytes, which os.fsdecode spells as lone surrogates, too)
    return {f"{module}.pth": f"import {module}\n".encode(),
            f"{module}.py": _HOOK.encode(),
            f"{module}.json": (json.dumps(config, sort_keys=True, indent=1) + "\n").encode()}
