"""The build of an extension project's own SConstruct, which the PEP 517
backend (autograd_scons.build_meta) and the editable install's rebuild on
import (editable.py) both run, and what they share about it.

    request = ProjectBuild.from_settings(project, {"PCH": "0", "-j": "4"}, "build/cp311-linux_x86_64")
    build_project(request, log_path, quiet=True)
"""

import os
import re
from dataclasses import dataclass
from typing import Optional

from autograd_scons.buildenv import runner

# Set in the environment of every build the backend or an editable import
# starts: an import inside a build never starts another one.
BUILDING_ENV = "AUTOGRAD_SCONS_BUILDING"
# The record of the inputs of the last build an editable import checked.
EDITABLE_STAMP = ".editable_stamp.json"


@dataclass(frozen=True)
class ProjectBuild:
    """One build of a project's SConstruct: built once by the backend from
    pip's `-C KEY=VALUE` settings, recorded by an editable install as its
    command line (`args`) and built again from it by the rebuild on import.
    The options (PCH, CXX, UNITY, PYTHON, CUDA, ... as `scons -h` lists
    them) are SCons variables, checked by the SConstruct's environment."""
    project: str
    build: str                 # the build folder, relative to the project
    variables: tuple = ()      # ((name, value), ...), sorted
    jobs: Optional[int] = None
    flags: tuple = ()          # SCons's other options, passed as they are

    @classmethod
    def from_settings(cls, project, config_settings, default_build):
        """From `-C KEY=VALUE` (a variable; BUILD= the build folder),
        `-C -j=N` and `-C --flag[=value]`."""
        variables, jobs, flags, build = {}, None, [], default_build
        for key, value in sorted((config_settings or {}).items()):
            value = value[-1] if isinstance(value, list) else value
            if key in ("-j", "--jobs", "jobs"):
                jobs = int(value)
            elif key.startswith("-"):
                flags.append(f"{key}={value}" if value else key)
            elif key == "BUILD":
                build = value or default_build
            else:
                variables[key] = value
        return cls(project, build, tuple(sorted(variables.items())), jobs, tuple(flags))

    @classmethod
    def from_args(cls, project, build, args):
        """From the command line `args` recorded by an editable install."""
        variables = dict(a.split("=", 1) for a in args if "=" in a and not a.startswith("-"))
        flags = [a for a in args if a.startswith("-")]
        jobs = next((int(f[2:]) for f in flags if re.fullmatch(r"-j\d+", f)), None)
        return cls(project, build, tuple(sorted(variables.items())), jobs,
                   tuple(f for f in flags if not re.fullmatch(r"-j\d+", f)))

    @property
    def args(self) -> list:
        """The build's command line, as an editable install records it."""
        return [f"{k}={v}" for k, v in self.variables] + \
            ([f"-j{self.jobs}"] if self.jobs is not None else []) + list(self.flags)

    @property
    def folder(self) -> str:
        return os.path.join(self.project, self.build)


def write_editable_stamp(folder, args):
    """After a build of `folder`: the editable stamp (stamp_key(args), the
    inputs the build recorded) and the library it made, as an output: a
    library changed since (swapped, or overwritten by a killed build's
    linker) is not up to date, whatever the inputs say."""
    import json
    from autograd_scons.buildenv import up_to_date
    with open(os.path.join(folder, "wheel.json")) as f:   # extension.WHEEL_JSON, written by every build
        library = os.path.join(folder, json.load(f)["library"])
    up_to_date.write_stamp(os.path.join(folder, EDITABLE_STAMP), stamp_key(args), os.path.join(folder, up_to_date.INPUTS),
                      outputs=[library])


def distrust_a_changed_library(folder):
    """Before a rebuild: when the library is not the one the last build
    recorded, SCons checks every target against its database (the records
    of a build may not vouch for files changed behind its back)."""
    from autograd_scons.buildenv import up_to_date, unfinished_build
    if up_to_date.outputs_differ(os.path.join(folder, EDITABLE_STAMP)):
        unfinished_build.distrust(os.path.join(folder, unfinished_build.DATABASE))


def stamp_key(args):
    """What besides the inputs decides the build: the arguments, and the
    torch the library links (its headers are not among the inputs)."""
    import importlib.util
    from autograd_scons.buildenv import torch_flags
    spec = importlib.util.find_spec("torch")
    root = list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None
    return {"args": list(args), "torch": torch_flags.torch_stamp(root) if root else None}


def build_project(request, log_path, lock, quiet=False, label="autograd_scons"):
    """Run the project's SConstruct for `request` (a ProjectBuild) in the
    project (runner.run_scons, the runner of every build started from
    Python), its log `log_path`; quiet, one progress line per stage instead
    of SCons's output.  Raises BuildError with the first compiler error on
    failure.  Called holding the build folder's `lock` (a lock.BuildLock),
    which records the build's process group: whatever a killed build left
    running (a compiler, a linker still writing the library) is killed by
    the next holder before it builds.  Any build makes the editable stamp
    stale."""
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    try:
        os.unlink(os.path.join(request.folder, EDITABLE_STAMP))
    except FileNotFoundError:
        pass
    runner.run_scons(os.path.join(request.project, "SConstruct"), request.project,
                     dict(request.variables, BUILD=request.build), jobs=request.jobs, verbose=not quiet,
                     label=label, lock=lock, extra_args=["-Q"] + list(request.flags), log_path=log_path,
                     private=False,
                     environ={BUILDING_ENV: "1"})
