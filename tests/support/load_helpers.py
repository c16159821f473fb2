"""Helpers for the tests of load()/load_inline() (not a test module).

Every load() runs in a process of its own, as a notebook or a training
script would: RUNNER, in a child forked after `import torch` (support/forked.py:
the import is most of a new interpreter's cost), or with `fresh=True` in a new
interpreter (`python -c`).  RUNNER imports this worktree's site_scons/ as
`autograd_scons` (not the installed copy).  The example's
specs and sources are copied to a temporary folder so that tests can edit
them.
"""

import json
import os
import shutil
import subprocess
import sys

from support import forked
from support.spec_facts import REPO
from support.scons_helpers import FAKE_CXX, extensions_dir  # noqa: F401 (the one spelling: -I -S, no site to import)

SPECS = os.path.join(REPO, "specs")

RUNNER = f"""
import importlib.util, json, os, sys
site = os.path.join({REPO!r}, "site_scons")
sys.path.insert(0, site)
import torch
from autograd_scons import load, load_inline
call = json.loads(sys.argv[1])
fn = load_inline if call.pop("inline", False) else load
try:
    ops = fn(**call)
except Exception as e:
    print("ERROR " + type(e).__name__ + ": " + str(e), flush=True)
    sys.exit(3)
print("LOADED " + ops.__name__, flush=True)
exec(sys.argv[2] if len(sys.argv) > 2 else "")
"""


def example(dst):
    """A copy of the example extension's specs and sources; its load() arguments."""
    shutil.copytree(SPECS, dst, ignore=shutil.ignore_patterns("python", "__pycache__"))
    dst = str(dst)
    return {"name": "myops", "native_functions": os.path.join(dst, "native_functions.yaml"),
            "derivatives": os.path.join(dst, "derivatives.yaml"),
            "sources": [os.path.join(dst, "csrc", "kernels.cpp"), os.path.join(dst, "csrc", "kernels_cuda.cu")],
            "extra_include_paths": [os.path.join(dst, "include")], "includes": ["myops/backward_helpers.h"],
            "namespace": "myops::autograd"}


def environ(cxx=FAKE_CXX, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOGRAD_", "MAX_JOBS"))}
    env["CXX"] = cxx
    env["AUTOGRAD_EXTENSIONS_DIR"] = extensions_dir()
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def real_compiler():
    """environ() for a build with the real compiler (CXX, else g++): two
    jobs, and -O0 (SCons reads SCONSFLAGS' `OPT=`; load()'s default is
    -O2), since these tests check what is built and loaded, and -O0 halves
    a compile (docs/testing.md)."""
    return environ(cxx=os.environ.get("CXX") or "g++", MAX_JOBS="2", SCONSFLAGS="OPT=-O0")


def command(call, then=""):
    return [sys.executable, "-c", RUNNER, json.dumps(call), then]


def run(call, env, then="", check=True, python=None, timeout=600, fresh=False):
    """load() in a child of its own (a new interpreter with `fresh` or `python`)."""
    cmd = command(call, then)
    if python:
        cmd[0] = python
    if python or fresh:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    else:
        proc = forked.run(RUNNER, cmd[3:], env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"load() exited {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\n"
                             f"stderr:\n{proc.stderr[-3000:]}")
    return proc


def start(call, env, then="", fresh=False):
    if fresh:
        return subprocess.Popen(command(call, then), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
    return forked.Forked(RUNNER, command(call, then)[3:], env)


def stall(folder, step):
    """Make the stand-in compiler's `step` ("compile" or "link") in `folder`
    write half its output, then wait (support/fakecxx.sh); returns the marker
    file it creates when it gets there."""
    marker = os.path.join(folder, f"stalled-{step}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".fakecxx_stall"), "w") as f:
        f.write(f"{step}:{marker}")
    return marker


def wait_for(path, proc, limit=120):
    """Poll until `path` exists; fails if `proc` ends first or after `limit` s."""
    import time
    deadline = time.monotonic() + limit
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
