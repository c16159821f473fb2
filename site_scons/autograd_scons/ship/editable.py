"""The editable install (PEP 660) of an extension project: importing the
package rebuilds it first, incrementally, as meson-python's editable
installs do.

The editable wheel (build_meta.build_editable; its files:
wheel_files.editable_files) holds three files: a `.pth` that imports
`_<package>_editable`, a module of constant source, which calls
`install_file()`: it reads the project's folder, build folder and SCons
arguments from `_<package>_editable.json` beside it (data: no path is ever
pasted into Python source) and calls `install()`.  `install` puts an
`EditableFinder` first on `sys.meta_path`.  Its `find_spec` for the package
(only the top-level name) runs `rebuild()` once per interpreter, then gives
the package from the project's folder, with the build folder's copy of the
package (the library) also on its `__path__`.

`rebuild` is the machinery `load()` uses (base.lock, runner): the
stamp check first, which needs a stat per input and no SCons (a no-op
import costs that: docs/shipping.md), then, under the build folder's OS
lock, SCons.  A failed build raises ImportError with the first compiler
error and the log's path.  Every build sets $AUTOGRAD_SCONS_BUILDING, and
an import inside a build never starts another.
"""

import os
import sys

# (build_meta, with its archive modules, is imported only to build: the
# .pth imports this module at every interpreter start.)


def rebuild(project, build, args, label):
    """Bring `<project>/<build>` up to date; ImportError when the build
    fails.  Returns True when SCons ran."""
    from autograd_scons.buildenv import runner, up_to_date
    from autograd_scons.ship.project import EDITABLE_STAMP, stamp_key
    folder = os.path.join(project, build)
    stamp_path = os.path.join(folder, EDITABLE_STAMP)
    key = stamp_key(args)
    if up_to_date.up_to_date(stamp_path, key):
        return False
    from autograd_scons.buildenv.runner import BuildError
    from autograd_scons.ship.project import (ProjectBuild, build_project, distrust_a_changed_library,
                                             write_editable_stamp)
    from autograd_scons.base.lock import BuildLock
    try:
        with BuildLock(folder, label=label) as lock:
            if up_to_date.up_to_date(stamp_path, key):  # built meanwhile by whoever held the lock
                return False
            distrust_a_changed_library(folder)
            up_to_date.clear_stamp(stamp_path)
            print(f"{label}: rebuilding {folder} (log: {os.path.join(folder, runner.LOG)})", file=sys.stderr)
            build_project(ProjectBuild.from_args(project, build, args), os.path.join(folder, runner.LOG), lock,
                          quiet=True, label=label)
            write_editable_stamp(folder, args)
    except (BuildError, OSError, TimeoutError) as e:
        raise ImportError(str(e) if str(e).startswith(label) else f"{label}: {e}") from None
    return True


class EditableFinder:
    """A meta path finder (not importlib.abc's subclass: importing that costs
    a noticeable share of every interpreter start)."""

    def __init__(self, package, project, build, args):
        self.package, self.project, self.build, self.args = package, project, build, list(args)
        self.checked = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.package:
            return None
        from autograd_scons.ship.project import BUILDING_ENV  # (the package's first import only)
        if not self.checked and not os.environ.get(BUILDING_ENV):
            self.checked = True  # once per interpreter, even when it fails
            rebuild(self.project, self.build, self.args, f"editable {self.package}")
        import importlib.util
        source = os.path.join(self.project, self.package)
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(source, "__init__.py"),
            submodule_search_locations=[source, os.path.join(self.project, self.build, self.package)])


def install(config):
    """Called by the `.pth`'s module at interpreter start."""
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
