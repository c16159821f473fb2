"""The build of an extension project's own SConstruct, which the PEP 517
backend (autograd_scons.build_meta) and the editable install's rebuild on
import (editable.py) both run, and what they share about it.

    build_project(project, "build/cp311-linux_x86_64", ["PCH=0", "-j4"], log_path, quiet=True)
"""

import os
import re

from autograd_scons.buildenv import runner

# Set in the environment of every build the backend or an editable import
# starts: an import inside a build never starts another one.
BUILDING_ENV = "AUTOGRAD_SCONS_BUILDING"
# The record of the inputs of the last build an editable import checked.
EDITABLE_STAMP = ".editable_stamp.json"


def stamp_key(args):
    """What besides the inputs decides the build: the arguments, and the
    torch the library links (its headers are not among the inputs)."""
    import importlib.util
    from autograd_scons.buildenv import torch_flags
    spec = importlib.util.find_spec("torch")
    root = list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None
    return {"args": list(args), "torch": torch_flags.torch_stamp(root) if root else None}


def build_project(project, build, args, log_path, quiet=False, label="autograd_scons"):
    """Run the project's SConstruct in the project (runner.run_scons, the
    runner of every build started from Python), its log `log_path`; quiet,
    one progress line per stage instead of SCons's output.  Raises
    BuildError with the first compiler error on failure.  Called holding
    the build folder's lock.BuildLock.  Any build makes the editable
    stamp stale."""
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    try:
        os.unlink(os.path.join(project, build, EDITABLE_STAMP))
    except FileNotFoundError:
        pass
    variables = dict(a.split("=", 1) for a in args if "=" in a and not a.startswith("-"))
    flags = [a for a in args if a.startswith("-")]
    jobs = next((int(f[2:]) for f in flags if re.fullmatch(r"-j\d+", f)), None)
    runner.run_scons(os.path.join(project, "SConstruct"), project, dict(variables, BUILD=build), jobs=jobs,
                     verbose=not quiet, label=label, extra_args=["-Q"] + [f for f in flags if not f.startswith("-j")],
                     log_path=log_path, private=False, environ={BUILDING_ENV: "1"})
