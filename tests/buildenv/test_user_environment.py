"""A compiler given as CXX, a wrapper script of the user's, sees the user's
environment variables, as torch.utils.cpp_extension lets it: in `scons`, in
load() and in the build backend (one environment, buildenv/environment.py,
for all three).  No signature depends on them: the same build with another
value compiles nothing.

The wrapper logs the value of a variable of the user's, then runs the
stand-in compiler.  Before the fix SCons ran commands with PATH alone (and a
launcher's own variables), so the wrapper logged `unset`.  `scons` is in
the fast tier; load() and the backend, the same promise through the other
two entry points, in the compile tier (no compiler, but a pip-free backend
build and two load() processes)."""

import os
import shutil
import subprocess
import sys

import pytest

from support import load_helpers, ship_helpers as ship
from support.scons_helpers import FAKE_CXX, compiled, scons

VARIABLE = "AGF_USERS_OWN_SETTING"


def wrapper(folder):
    """(CXX, its log): the log gets `<value of VARIABLE> compile|link|version`
    per run (SCons's g++ tool asks the version at every start)."""
    os.makedirs(folder, exist_ok=True)
    log = os.path.join(folder, "wrapper.log")
    path = os.path.join(folder, "g++")   # the compiler's family is read off its name
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                'case " $* " in *" -c "*) step=compile ;; *" --version "* | *" -dumpversion "*) step=version ;; '
                '*) step=link ;; esac\n'
                f'printf "%s %s\\n" "${{{VARIABLE}-unset}}" "$step" >> {log}\n'
                f'exec {FAKE_CXX} "$@"\n')
    os.chmod(path, 0o755)
    return path, log


def logged(log):
    """(value, step) of each compile and link logged (not the version questions)."""
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [line.split() for line in f.read().splitlines() if not line.endswith(" version")]


def steps(log, value):
    """The steps logged, after checking that each saw `value`."""
    lines = logged(log)
    assert {v for v, _ in lines} <= {value}, lines
    return sorted(step for _, step in lines)


def test_scons_compilers_see_the_users_variables_and_no_signature_does(tiny_checkout, tmp_path):
    root = str(tmp_path / "repo")
    shutil.copytree(tiny_checkout[0], root, symlinks=True)
    cxx, log = wrapper(str(tmp_path / "bin"))
    args = ("-j2", f"CXX={cxx}", "EXAMPLE=tests/fixtures/tiny_ext")
    first = scons(root, *args, environ={VARIABLE: "one"}).stdout
    objects = compiled(first)
    assert objects and steps(log, "one").count("compile") == len(objects)
    assert steps(log, "one").count("link") >= 1

    os.remove(log)
    again = scons(root, *args, environ={VARIABLE: "two"}).stdout
    assert compiled(again) == [] and logged(log) == []


@pytest.mark.compile
def test_load_compilers_see_the_users_variables_and_no_signature_does(tmp_path):
    call = load_helpers.example(tmp_path / "ext")
    call["sources"] = call["sources"][:1]   # kernels.cpp (the stand-in: no .cu)
    cxx, log = wrapper(str(tmp_path / "bin"))
    env = load_helpers.environ(cxx=cxx, AUTOGRAD_EXTENSIONS_DIR=str(tmp_path / "extensions"),
                               **{VARIABLE: "three"})
    out = load_helpers.run(call, env, fresh=True).stdout
    assert "LOADED torch.ops.myops" in out
    assert steps(log, "three").count("compile") >= 2 and "link" in steps(log, "three")

    os.remove(log)
    env[VARIABLE] = "four"
    load_helpers.run(call, env, fresh=True)
    assert logged(log) == []


@pytest.mark.compile
def test_backend_compilers_see_the_users_variables_and_no_signature_does(tmp_path):
    path = ship.this_checkout(tmp_path)
    ship.new(tmp_path, "user_env_ops", path)
    project = str(tmp_path / "user_env_ops")
    cxx, log = wrapper(str(tmp_path / "bin"))
    code = ("import sys; from autograd_scons import build_meta; "
            "print(build_meta.build_wheel(sys.argv[1], {'CXX': sys.argv[2], 'PCH': '0'}))")
    for value in ("five", "six"):
        os.makedirs(tmp_path / f"dist-{value}")
        env = ship.environ(path, **{VARIABLE: value})
        proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / f"dist-{value}"), cxx], cwd=project,
                              env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        if value == "five":
            assert steps(log, "five").count("compile") >= 2 and "link" in steps(log, "five")
            os.remove(log)
    assert logged(log) == []   # the second wheel compiled and linked nothing
