"""The editable install (PEP 660) of an extension project: importing the
package rebuilds it first, incrementally, as meson-python's editable
installs do.

The editable wheel (build_meta.build_editable) holds two files: a `.pth`
that imports `_<package>_editable`, which calls `install()` with the
project's folder, build folder and SCons arguments.  `install` puts an
`EditableFinder` first on `sys.meta_path`.  Its `find_spec` for the package
(only the top-level name) runs `rebuild()` once per interpreter, then gives
the package from the project's folder, with the build folder's copy of the
package (the library) also on its `__path__`.

`rebuild` is the machinery `load()` uses (codegen.lock, runner): the
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
    from autograd_scons.buildenv import runner
    from autograd_scons.ship.project import EDITABLE_STAMP, stamp_key
    folder = os.path.join(project, build)
    stamp = os.path.join(folder, EDITABLE_STAMP)
    key = stamp_key(args)
    if runner.up_to_date(stamp, key):
        return False
    from autograd_scons.buildenv.runner import BuildError
    from autograd_scons.ship.project import build_project
    from autograd_scons.codegen.lock import BuildLock
    try:
        with BuildLock(folder, label=label):
            if runner.up_to_date(stamp, key):  # built meanwhile by whoever held the lock
                return False
            runner.clear_stamp(stamp)
            print(f"{label}: rebuilding {folder} (log: {os.path.join(folder, runner.LOG)})", file=sys.stderr)
            build_project(project, build, args, os.path.join(folder, runner.LOG), quiet=True, label=label)
            runner.write_stamp(stamp, key, os.path.join(folder, runner.INPUTS))
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


_HOOK = '''"""Editable install of {package} (autograd_scons.build_meta): imported by
its .pth; importing {package} rebuilds {project} first."""
try:
    from autograd_scons.ship.editable import install
except ImportError:  # autograd-functions-scons uninstalled: {package} is not importable
    pass
else:
    install({config})
'''


def wheel_files(project, package, build, args):
    """{path in the wheel: bytes} of an editable wheel; the build has just
    run, so its stamp is written now and the first import is a no-op."""
    import json
    from autograd_scons.buildenv import runner
    from autograd_scons.ship.project import EDITABLE_STAMP, stamp_key
    folder = os.path.join(project, build)
    runner.write_stamp(os.path.join(folder, EDITABLE_STAMP), stamp_key(args), os.path.join(folder, runner.INPUTS))
    config = {"package": package, "project": project, "build": build, "args": list(args)}
    module = f"_{package}_editable"
    return {f"{module}.pth": f"import {module}\n".encode(),
            f"{module}.py": _HOOK.format(package=package, project=project,
                                         config=json.dumps(config, sort_keys=True)).encode()}
