"""The installed distribution carries everything an embedding build needs.

A wheel of this checkout (`pip wheel --no-deps`) is installed into a fresh
venv (no system site-packages, this checkout nowhere on its sys.path), with
the oldest SCons the tool supports; a host SConstruct in a temporary folder
outside the checkout loads the tool and its helpers from the installed
`autograd_scons` package, generates a tiny extension's Functions and
compiles and links them with the stand-in compiler; the wheel installs one
top-level package, `autograd_scons`; `python -m autograd_scons generate`
and `new` work from it; no module is ever imported from the checkout; and an
editable install of the same source generates the same files.
An SCons older than the tool supports is refused in one line.

Needs PyPI (scons, PyYAML, xxhash for the venv): without it, skipped.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from support.scons_helpers import compiled, report, tree
from support.ship_helpers import copy_checkout
from tool.test_scons_embedding import DERIVATIVES, NATIVE  # the same one-op host extension
from support.spec_facts import REPO

# The full tier (conftest.py): a wheel build and a venv (~15 s); the stand-in compiler.
pytestmark = [pytest.mark.slow, pytest.mark.compile]

SCONS_MIN = "4.5.2"  # site_scons/autograd_scons/tool/compat.py: MIN_SCONS
FAKE_CXX = os.path.join(REPO, "tests", "support", "fakecxx.sh")  # copied into the host folder

# No torch here: flags are set by hand, as the stand-in builds need none.
SCONSTRUCT = """
import json, os, sys
import autograd_scons
from autograd_scons.buildenv import torch_flags, verified_cache

cxx = "sh " + os.path.abspath("fakecxx.sh")
env = Environment(tools=["gcc", "g++", "gnulink", "ar"], CXX=cxx, SHCXX=cxx, LINK=cxx, SHLINK=cxx,
                  ENV={"PATH": os.environ["PATH"]})
env.SConsignFile("build/.sconsign")
env.CacheDir("build/cache", verified_cache.VerifiedCacheDir)
env.Tool("autograd_functions", toolpath=[autograd_scons.TOOLPATH])
functions = env.AutogradFunctions("build/gen", native_functions="spec/native_functions.yaml",
                                  derivatives="spec/derivatives.yaml", namespace="host::grad")
Default(env.SharedLibrary("build/hostops", functions + ["own.cpp"]))
# the library builder too (its no-op stamp: autograd_stamp)
Default(env.AutogradLibrary("build/hostfns", "build/gen_lib", native_functions="spec/native_functions.yaml",
                            derivatives="spec/derivatives.yaml", namespace="host::lib"))
tool = env.AutogradFunctions.method.__code__.co_filename
files = {name: getattr(m, "__file__", None) for name, m in list(sys.modules.items())}
with open("modules.json", "w") as f:
    json.dump({"tool": tool, "files": files, "toolpath": autograd_scons.TOOLPATH}, f)
"""


def _run(cmd, cwd, check=True, **more_env):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")
           and not k.startswith(("AUTOGRAD_", "SCONS"))}
    env.update(more_env)
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {proc.returncode}\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """(venv python, its site-packages, the folder, the source copy the wheel
    was built from), with the wheel and SCONS_MIN installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = copy_checkout(tmp / "src")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", str(tmp / "dist"), str(src)], cwd=tmp)
    wheels = os.listdir(tmp / "dist")
    assert len(wheels) == 1 and wheels[0].endswith(".whl")
    py = _fresh_venv(tmp, "venv")
    _run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(tmp / "dist" / wheels[0])], cwd=tmp)
    site = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp).stdout.strip()
    return py, site, tmp, src


def _fresh_venv(tmp, name):
    """A venv with SCONS_MIN, PyYAML and xxhash from PyPI (skipped without
    it): a copy of one made once per folder (a venv finds itself from its
    own pyvenv.cfg, so a copy is a venv of its own; creating one with pip and
    installing the three costs ~6 s of CPU)."""
    base = tmp / "venv-deps"
    if not base.exists():
        _run([sys.executable, "-m", "venv", str(base)], cwd=tmp)
        deps = _run([str(base / "bin" / "python"), "-m", "pip", "install", "-q", f"scons=={SCONS_MIN}",
                     "PyYAML", "xxhash"], cwd=tmp, check=False)
        if deps.returncode != 0:
            shutil.rmtree(base)
            pytest.skip("cannot install scons/PyYAML/xxhash from PyPI into a fresh venv (needs network access "
                        f"or a pip index): {deps.stderr.strip().splitlines()[-1:]}")
    shutil.copytree(base, tmp / name, symlinks=True)
    return str(tmp / name / "bin" / "python")


def _host(tmp, name):
    host = tmp / name
    (host / "spec").mkdir(parents=True)
    (host / "spec" / "native_functions.yaml").write_text(NATIVE)
    (host / "spec" / "derivatives.yaml").write_text(DERIVATIVES)
    (host / "own.cpp").write_text('#include "functions/ScaleBackward0.h"\n')
    (host / "SConstruct").write_text(SCONSTRUCT)
    shutil.copy(FAKE_CXX, host / "fakecxx.sh")
    return host


def _from_checkout(files):
    repo = os.path.realpath(REPO) + os.sep
    return sorted(n for n, f in files.items() if f and os.path.realpath(f).startswith(repo))


def test_installed_tool_builds_an_embedding_sconstruct(venv):
    py, site, tmp, src = venv
    host = _host(tmp, "host")
    r = _run([py, "-m", "SCons", "-Q", "-j2"], cwd=host)
    assert "ScaleBackward0" in (host / "build" / "gen" / "Functions.h").read_text()
    assert (host / "build" / "libhostops.so").is_file() and (host / "build" / "libhostfns.so").is_file()
    assert "own.os" in compiled(r.stdout) and len(compiled(r.stdout)) >= 2  # ours + the generated TU(s)
    assert any(line.startswith("build/gen: 1 Functions + 1 op kernels: 2 regenerated") for line in report(r.stdout))
    seen = json.loads((host / "modules.json").read_text())
    files = seen["files"]
    site = os.path.realpath(site) + os.sep
    for mod in ("autograd_scons.codegen", "autograd_scons.codegen.engine.incremental", "autograd_scons",
                "autograd_scons.buildenv.verified_cache", "autograd_scons.tool.library_noop", "SCons"):
        assert files.get(mod) and os.path.realpath(files[mod]).startswith(site), (mod, files.get(mod))
    assert os.path.realpath(seen["tool"]) == os.path.join(site, "autograd_scons", "tool", "builders.py")
    assert not [n for n in files if n.split(".")[0] in ("codegen", "torch_flags", "autograd_stamp")]
    assert _from_checkout(files) == []
    # an editable install of the same source generates the same files
    ed = _fresh_venv(tmp, "venv-editable")
    _run([ed, "-m", "pip", "install", "-q", "--no-deps", "-e", str(src)], cwd=tmp)
    ed_host = _host(tmp, "host-editable")
    _run([ed, "-m", "SCons", "-Q", "-j2"], cwd=ed_host)
    assert tree(ed_host / "build" / "gen") == tree(host / "build" / "gen")
    ed_files = json.loads((ed_host / "modules.json").read_text())["files"]
    package = os.path.join(os.path.realpath(src), "site_scons", "autograd_scons")
    assert ed_files["autograd_scons.codegen"] == os.path.join(package, "codegen", "__init__.py")   # not through a link
    assert ed_files["autograd_scons"] == os.path.join(package, "__init__.py")
    # a second run: up to date, nothing compiled
    again = _run([py, "-m", "SCons", "-Q", "-j2"], cwd=host)
    assert compiled(again.stdout) == [] and "inputs unchanged (specs not parsed)" in again.stdout
    assert "library up to date since its last build" in again.stdout


def test_the_wheel_installs_one_top_level_package(venv):
    py, site, _, _ = venv
    info = [d for d in os.listdir(site) if d.startswith("autograd_functions_scons-") and d.endswith(".dist-info")]
    assert len(info) == 1
    with open(os.path.join(site, info[0], "top_level.txt")) as f:
        assert f.read().split() == ["autograd_scons"]
    with open(os.path.join(site, info[0], "RECORD")) as f:
        tops = {line.split("/")[0] for line in f.read().splitlines() if line}
    assert tops == {"autograd_scons", info[0]}, tops


def test_the_generator_has_one_name_in_the_installed_tool(venv):
    py, _, tmp, _ = venv
    proc = _run([py, "-c", "import autograd_scons.codegen.engine.incremental as i; print(i.__file__)\n"
                 "try:\n    import codegen\nexcept ImportError as e:\n    print(type(e).__name__)"], cwd=tmp)
    where, refused = proc.stdout.split()
    assert where.endswith(os.path.join("autograd_scons", "codegen", "engine", "incremental.py")), where
    assert refused == "ModuleNotFoundError"


def test_python_m_autograd_scons_runs_from_the_wheel(venv):
    py, site, tmp, _ = venv
    host = _host(tmp, "cli")
    code = textwrap.dedent("""
        import runpy, sys
        sys.argv = ["autograd_scons"] + sys.argv[1:]
        try:
            runpy.run_module("autograd_scons", run_name="__main__")
        except SystemExit as e:
            assert not e.code, e.code
        finally:
            import json
            print(json.dumps({n: getattr(m, "__file__", None) for n, m in list(sys.modules.items())}))
    """)
    r = _run([py, "-c", code, "generate", "--native-functions", "spec/native_functions.yaml",
              "--derivatives", "spec/derivatives.yaml", "--out", "gen", "--quiet"], cwd=host)
    assert (host / "gen" / "functions" / "ScaleBackward0.cpp").is_file()
    files = json.loads(r.stdout.strip().splitlines()[-1])
    assert os.path.realpath(files["autograd_scons.codegen"]).startswith(os.path.realpath(site) + os.sep)
    assert _from_checkout(files) == [] and "codegen" not in files
    for command in ("generate", "infos", "weaken", "new"):
        assert _run([py, "-m", "autograd_scons", command, "--help"], cwd=host).stdout.startswith("usage: ")
    # `new` needs torch (it pins the one installed): this interpreter's, with the wheel's package first
    made = _run([sys.executable, "-m", "autograd_scons", "new", "wheelops"], cwd=host, PYTHONPATH=site)
    assert "wheelops: written" in made.stdout and (host / "wheelops" / "pyproject.toml").is_file()
    assert (host / "wheelops" / "native_functions.yaml").is_file()
    assert _run([py, "-m", "codegen", "--help"], cwd=host, check=False).returncode != 0


def test_an_scons_older_than_supported_is_one_line(venv):
    py, _, tmp, _ = venv
    host = _host(tmp, "old")
    prelude = "import SCons; SCons.__version__ = '4.4.0'\nimport sys\nfrom SCons.Script.Main import main\nmain()"
    r = _run([py, "-c", prelude, "-Q"], cwd=host, check=False)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == ["scons: *** the autograd_functions tool needs SCons >= 4.5, this is SCons 4.4.0 "
                     "(pip install 'scons>=4.5')"], r.stderr
    assert not (host / "build" / "gen").exists()


def test_a_checkout_uses_its_own_code_not_the_installed_copy(venv, tmp_path):
    """`scons` in a checkout, with another copy installed ahead of it (the
    wheel's site-packages on PYTHONPATH; this interpreter for torch's facts):
    the checkout's generator and helpers are used, never the installed ones
    (SCons puts the checkout's site_scons/ first on sys.path)."""
    _, site, _, _ = venv
    from support.scons_helpers import TINY_ARGS, clone
    repo = clone(tmp_path / "repo")
    r = _run([sys.executable, "-c", _DUMP, "-Q", *TINY_ARGS], cwd=repo, PYTHONPATH=site)
    assert "3 Functions: 3 regenerated" in r.stdout
    files = json.loads(open(os.path.join(repo, "modules.json")).read())
    mine = os.path.realpath(repo) + os.sep
    ours = [n for n in files if n.split(".")[0] == "autograd_scons"]
    assert "autograd_scons.codegen.engine.incremental" in ours and "autograd_scons.buildenv.torch_flags" in ours
    assert [n for n in ours if not os.path.realpath(files[n]).startswith(mine)] == []
    assert not [n for n in files if n.split(".")[0] in ("codegen", "torch_flags")]


_DUMP = ("import atexit, json, sys\n"
         "atexit.register(lambda: open('modules.json', 'w').write(json.dumps("
         "{n: getattr(m, '__file__', None) for n, m in list(sys.modules.items())})))\n"
         "from SCons.Script.Main import main\nmain()")


def test_a_build_that_imported_the_installed_tool_first_never_mixes_the_two(venv, tmp_path):
    """A checkout's build in a process that already imported the installed
    `autograd_scons`: every module of the tool then comes from that one copy,
    none from the checkout (one copy per process, never a mix)."""
    _, site, _, _ = venv
    from support.scons_helpers import TINY_ARGS, clone
    repo = clone(tmp_path / "repo")
    prelude = f"import sys\nsys.path.insert(0, {site!r})\nimport autograd_scons\nsys.path.pop(0)\n" + _DUMP
    r = _run([sys.executable, "-c", prelude, "-Q", *TINY_ARGS], cwd=repo)
    assert "3 Functions: 3 regenerated" in r.stdout
    files = json.loads(open(os.path.join(repo, "modules.json")).read())
    ours = [n for n in files if n.split(".")[0] == "autograd_scons" and files[n]]
    assert "autograd_scons.codegen.engine.incremental" in ours
    elsewhere = [n for n in ours if not os.path.realpath(files[n]).startswith(os.path.realpath(site) + os.sep)]
    assert elsewhere == []
