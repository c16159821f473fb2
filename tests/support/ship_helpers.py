"""Helpers for the tests of shipping an extension (`python -m autograd_scons
new`, the build backend autograd_scons.build_meta): not a test module.

pip runs the backend in a subprocess with the build environment's Python:
with --no-build-isolation, this one, where `autograd_scons` may be installed
editable from another checkout.  This checkout's site_scons/ (the folder
holding its package), put first on PYTHONPATH, makes pip's backend (and
SCons under it) this checkout's."""

import os
import shutil
import subprocess
import sys
import zipfile

from support.spec_facts import REPO
from support.scons_helpers import FAKE_CXX  # noqa: F401 (the one spelling: -I -S, no site to import)



# The real compiler's optimisation level in the tests' wheel builds (given
# to the backend as -C OPT=...): -O0 takes about half the CPU of the
# default -O2 on torch's headers, and the tests check what a wheel holds
# and that its gradients are right, not its speed.
TEST_OPT = "OPT=-O0"


def this_checkout(tmp):
    """A PYTHONPATH entry whose `autograd_scons` is this checkout's."""
    return os.path.join(REPO, "site_scons")


def environ(pythonpath, **more):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AUTOGRAD_", "SCONS", "PIP_")) and k not in ("PYTHONHOME", "SOURCE_DATE_EPOCH")}
    env["PYTHONPATH"] = pythonpath
    env.update(more)
    return env


def run(cmd, cwd, env, check=True):
    proc = subprocess.run([str(c) for c in cmd], cwd=str(cwd), capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}")
    return proc


def new(where, name, pythonpath, *flags, python=sys.executable, check=True):
    return run([python, "-m", "autograd_scons", "new", name, *flags], where, environ(pythonpath), check=check)


def pip_wheel(source, out, pythonpath, *config, python=sys.executable, check=True, **more_env):
    """`pip wheel --no-build-isolation --no-deps` of a project folder or
    sdist; `config`: NAME=VALUE for -C (TEST_OPT added unless it names OPT or
    the stand-in CXX).  Returns (wheel path or None, proc)."""
    if not any(c.startswith(("OPT=", "CXX=")) for c in config):
        config += (TEST_OPT,)   # the real compiler: the tests' optimisation level
    os.makedirs(out, exist_ok=True)
    before = set(os.listdir(out))
    cmd = [python, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "--no-index", "-w", out,
           *[x for c in config for x in ("-C", c)], source]
    proc = run(cmd, os.path.dirname(os.path.abspath(source)), environ(pythonpath, **more_env), check=check)
    made = sorted(set(os.listdir(out)) - before)
    return (os.path.join(out, made[0]) if made else None), proc


def wheel_names(path):
    with zipfile.ZipFile(path) as z:
        return sorted(z.namelist())


def wheel_read(path, name):
    with zipfile.ZipFile(path) as z:
        return z.read(name)


def copy_project(src, dst):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    return str(dst)


# The backend's build folder inside a project (build_meta.build_dir)
BUILD = os.path.join("build", f"cp{sys.version_info[0]}{sys.version_info[1]}-linux_x86_64")


def edited_copy(project, dst, rel, old, new_text):
    """A copy of `project` at `dst` with `old` replaced in its file `rel`."""
    dst = copy_project(project, dst)
    path = os.path.join(dst, rel)
    with open(path) as f:
        text = f.read()
    assert old in text, f"{old!r} not in {path}"
    with open(path, "w") as f:
        f.write(text.replace(old, new_text))
    return dst


def new_wheel(tmp, name, pythonpath, *config, python=sys.executable):
    """`new` into tmp, then its wheel into tmp/dist: (project, wheel, pip's output)."""
    new(tmp, name, pythonpath, python=python)
    project = os.path.join(str(tmp), name)
    wheel, proc = pip_wheel(project, os.path.join(str(tmp), "dist"), pythonpath, *config, python=python)
    return project, wheel, proc.stdout + proc.stderr


def checkout_files():
    """The working tree as a fresh clone has it (tracked, and untracked not
    ignored): files, and links."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return [p for p in out.split("\0") if p and (os.path.isfile(os.path.join(REPO, p))
                                                  or os.path.islink(os.path.join(REPO, p)))]


def copy_checkout(dst):
    """A copy of the working tree as a clone has it (building in the checkout
    would leave build/ and egg-info behind)."""
    for rel in checkout_files():
        os.makedirs(os.path.join(dst, os.path.dirname(rel)), exist_ok=True)
        if os.path.islink(os.path.join(REPO, rel)):
            os.symlink(os.readlink(os.path.join(REPO, rel)), os.path.join(dst, rel))
        else:
            shutil.copy2(os.path.join(REPO, rel), os.path.join(dst, rel))
    return dst


def venv_seeing_this_one(folder, env, pip=False):
    """A venv at `folder` that also sees this interpreter's packages (torch):
    --system-site-packages alone shows the base interpreter's, not those of
    a venv the tests run in.  Returns its python."""
    import site
    cmd = [sys.executable, "-m", "venv", "--system-site-packages"] + ([] if pip else ["--without-pip"])
    run(cmd + [folder], os.path.dirname(str(folder)), env)
    py = os.path.join(str(folder), "bin", "python")
    purelib = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], "/", env).stdout.strip()
    # One statement per folder: Python before 3.12 runs a .pth line where a
    # comprehension cannot see the line's own `import site` (NameError).
    with open(os.path.join(purelib, "_outer_site.pth"), "w") as f:
        f.writelines(f"import site; site.addsitedir({p!r})\n" for p in site.getsitepackages())
    return py
