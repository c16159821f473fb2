"""Helpers for the tests that run SCons on copies of this repo (not a test module)."""

import atexit
import os
import re
import shutil
import subprocess
import tempfile
import sys

from support import forked
from support.spec_facts import REPO

# The stand-in compiler, a POSIX sh script (a Python one paid an interpreter
# start, ~0.1 s, on each of the fast tier's ~500 calls)
FAKE_CXX = f"sh {os.path.join(REPO, 'tests', 'support', 'fakecxx.sh')}"


def named_standin(folder, name):
    """The stand-in compiler under `name` (`g++`, `clang++`): the tool reads
    the compiler's family, and with it the precompiled prelude's rules, off
    its name."""
    path = os.path.join(folder, name)
    os.makedirs(folder, exist_ok=True)
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nexec {FAKE_CXX} \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def _tiny_cxx():
    """The tiny extension's compiler: the stand-in, or with
    AGF_TEST_STANDIN=clang++ (tests/example/test_clang_example.py runs the
    edit-count tests so) the stand-in named as clang."""
    name = os.environ.get("AGF_TEST_STANDIN")
    if not name:
        return FAKE_CXX
    folder = tempfile.mkdtemp(prefix="standin-")
    atexit.register(shutil.rmtree, folder, True)
    return named_standin(folder, name)


# `scons` of the tiny extension (tests/fixtures/tiny_ext) with the stand-in compiler
TINY_ARGS = ("-j2", f"CXX={_tiny_cxx()}", "EXAMPLE=tests/fixtures/tiny_ext")
# (a checkout that ran .ci/run's linters has a .mypy_cache of about 40 MB)
_SKIP = shutil.ignore_patterns(".git", ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.egg-info", ".sconsign*",
                               "compile_commands.json", ".benchmarks")
# build folders, at the top only: site_scons/ has buildenv/up_to_date.py and tool/builders.py
_BUILD_FOLDERS = shutil.ignore_patterns("build", "build-*", "build_*")


def _left_out(folder, names):
    """What a clone leaves out.  The tool's and the generator's __pycache__ are
    copied: their entries are checked against each source's mtime and size
    (copytree keeps both), and they spare every clone's first SCons run
    compiling them again.  The tests' and benchmarks' are not (2 MB a clone)."""
    skipped = set(_SKIP(folder, names))
    if os.path.abspath(folder) == os.path.abspath(REPO):
        skipped |= _BUILD_FOLDERS(folder, names)
    rel = os.path.relpath(folder, REPO).split(os.sep)[0]
    if rel in ("tests", "benchmarks") and "__pycache__" in names:
        skipped.add("__pycache__")
    return skipped


_FACTS: list = []  # the torch facts file, asked of torch once per test session


def clone(dst, torch_facts=True):
    """A copy of the working tree, as a second checkout would be; with
    `torch_facts`, its default build folder already holds the facts the
    SConstruct asks of torch (torch_flags.torch_facts: a 2 s `import torch`
    in a subprocess, which is not what these tests are about).  The top-level
    `codegen` stays the link it is in git (a copy of the generator, 300 files,
    was a second package no checkout has)."""
    shutil.copytree(REPO, dst, ignore=_left_out, symlinks=True)
    if torch_facts:
        if not _FACTS:  # in this process's own folder: a test's tmp_path goes when it passes
            from support.spec_facts import torch_flags
            path = os.path.join(extensions_dir(), f"torch_facts-{os.getpid()}.json")
            torch_flags.torch_facts(path)
            _FACTS.append(path)
        os.makedirs(os.path.join(dst, "build"))
        shutil.copy(_FACTS[0], os.path.join(dst, "build", ".torch.json"))
    return str(dst)


_extensions_dir = []


def _remove_if_ours(path, pid):
    if os.getpid() == pid:
        shutil.rmtree(path, ignore_errors=True)


def extensions_dir():
    """This process's stand-in for ~/.cache/autograd_extensions: where the
    builds of its tests share their precompiled prelude (tool/pch_compilers.py)."""
    if not _extensions_dir:
        # (a test's own pytest run, in a child, shares its parent's: AGF_TEST_EXTENSIONS_DIR)
        given = os.environ.get("AGF_TEST_EXTENSIONS_DIR")
        _extensions_dir.append(given or tempfile.mkdtemp(prefix="agf-extensions-"))
        if not given:  # ours: its ~0.1-0.5 GB precompiled preludes go with the process (not a fork of it)
            atexit.register(_remove_if_ours, _extensions_dir[0], os.getpid())
    return _extensions_dir[0]


def prelude_dir():
    """Where the scons builds of the tests share their precompiled prelude:
    the session's folder (AGF_TEST_SESSION_DIR, made by tests/conftest.py in
    pytest's controller, so that its workers precompile each variant once:
    the tool locks the folder, as for two builds of a user's at once), or
    this process's extensions_dir().  load() keeps the process's own: its
    builds live there too."""
    session = os.environ.get("AGF_TEST_SESSION_DIR")
    return os.path.join(session, "preludes") if session else extensions_dir()


# What every SCons run imports before the tool's own modules: SCons, and the
# third-party and standard modules the tool imports that SCons does not
# (~40 ms a run, hundreds of runs).  None of this repository's: a clone's
# SCons run imports its own copy.
SCONS_PRELOAD = "SCons.Script.Main,yaml,xxhash,difflib,base64,socket,concurrent.futures.thread,glob,sysconfig"


def scons(cwd, *args, prelude="", check=True, python=sys.executable, environ=None):
    """Run SCons (`python`, by default this interpreter) in cwd; `prelude`
    is Python run first in the same process (to inject faults); `environ`:
    variables to set (None: unset) for it."""
    code = prelude + "\nimport sys\nfrom SCons.Script.Main import main\nsys.exit(main())"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOGRAD_")}
    env["AUTOGRAD_EXTENSIONS_DIR"] = prelude_dir()  # the shared precompiled prelude's root
    for k, v in (environ or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    # Forked after `import SCons.Script.Main` (support/forked.py) unless
    # something must run before that import: a prelude, another Python, or
    # --debug=memoizer, which SCons reads as it is imported.
    debug = any(a.startswith("--debug") for a in list(args) + env.get("SCONSFLAGS", "").split())
    if prelude or python != sys.executable or debug:
        proc = subprocess.run([python, "-c", code, *args], cwd=cwd, capture_output=True, text=True, env=env)
    else:
        proc = forked.run(code, [str(a) for a in args], env, cwd=str(cwd), preload=SCONS_PRELOAD)
    if check and proc.returncode != 0:
        raise AssertionError(f"scons {' '.join(args)} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    return proc


def compiled(out):
    """Objects compiled in a build log: `-o X.os ... -c` lines."""
    return sorted(os.path.basename(m) for m in re.findall(r"-o (\S+\.os?) -c ", out))


def linked(out, lib):
    """The objects on the link line of `lib`, or None if it was not linked."""
    for line in out.splitlines():
        if re.search(rf"-o \S*{re.escape(lib)} ", line) and " -c " not in line:
            return sorted(os.path.basename(t) for t in line.split() if t.endswith((".os", ".o")))
    return None


def report(out):
    """The tool's report lines (without the `autograd_functions: ` prefix)."""
    return [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("autograd_functions: ")]


def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text, f"{old!r} not in {path}"
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))


def tree(root, skip=(".autograd_manifest", ".autograd_lock", ".autograd_native_cache")):
    """relpath -> bytes of the generated sources under root."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            if n in skip or n.endswith((".os", ".o")):
                continue
            p = os.path.join(dirpath, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def snapshot(root):
    """relpath -> (mtime in ns, bytes) of every file under root but the lock:
    what "touched nothing" and "rewrote only what differs" are checked on."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            if n != ".autograd_lock":
                p = os.path.join(dirpath, n)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = (os.stat(p).st_mtime_ns, f.read())
    return out
