"""Helpers for the tests of patching torch's own Functions (`patch-torch`,
`run-patched`): not a test module.  Every command runs in a child process
whose `autograd_scons` is this checkout's, as a user's shell would run it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from support.scons_helpers import prelude_dir
from support.spec_facts import REPO


# The patches' optimisation: -O0 unless AGF_PATCH_PROOF_OPT says otherwise
# (-O2 is what patch-torch's users get).  The compile is most of the patch
# tests' time, and a unity bucket of torch's Functions compiles in less than
# half the time at -O0 (docs/testing.md); the generated code computes by
# calling libtorch's ops, and its own double arithmetic is IEEE either way.
OPT = os.environ.get("AGF_PATCH_PROOF_OPT", "-O0")


def environ(tmp, **more) -> dict:
    """This process's environment, with this checkout's package and the
    tests' `support` importable, the patch built at OPT (SCons reads
    SCONSFLAGS' `OPT=`), and the folder of precompiled preludes that the
    test session's builds share (support/scons_helpers.prelude_dir: each
    patch built from scratch compiled its own, half a minute each)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "site_scons"), os.path.join(REPO, "tests")]))
    env.setdefault("SCONSFLAGS", f"OPT={OPT}")
    env.setdefault("AUTOGRAD_EXTENSIONS_DIR", prelude_dir())
    env.update(more)
    return env


def patch_torch(env, folder, *args, python=sys.executable) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "autograd_scons", "patch-torch", "-o", str(folder), *map(str, args)],
                          capture_output=True, text=True, env=env)


def compiled(proc) -> int:
    """How many objects a patch-torch run compiled (its report line)."""
    m = re.search(r"; (\d+) compiled$|; up to date$", proc.stdout, re.M)
    assert m, proc.stdout + proc.stderr
    return int(m.group(1)) if m.group(1) else 0


def run_patched(env, folder, code, python=sys.executable) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "autograd_scons", "run-patched", str(folder), "--", python, "-c", code],
                          capture_output=True, text=True, env=env)


def edited_specs(folder, *edits) -> str:
    """A copy of torch's own derivatives.yaml in `folder` with each (old,
    new) replaced once (the old text must be there); its path."""
    from autograd_scons.buildenv.torch_flags import torch_specs
    with open(torch_specs()[2], encoding="utf-8") as f:
        text = f.read()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = os.path.join(str(folder), "derivatives.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def leftovers(folder) -> list:
    """What a refused or failed build must not leave: the library, temporaries."""
    out = []
    for d, _, files in os.walk(str(folder)):
        out += [os.path.join(d, f) for f in files if ".tmp" in f or f == "libautograd_torch_patch.so"
                and d == str(folder)]
    return out
