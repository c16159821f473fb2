"""Shipping an extension (docs/shipping.md), with the stand-in compiler:
`python -m autograd_scons new` writes a project, pip builds its wheel
through autograd_scons.build_meta (--no-build-isolation), and the tests
check what the wheel holds (exactly the package's Python files and its
library, the torch pin, the interpreter's tag), that the pin takes the
torch it was built against in its local builds and refuses the next minor,
that a wheel built from the sdist and wheels built from two copies of the
project are the same bytes, that `new` refuses a bad name or an existing
folder writing nothing, that a build environment with the wrong torch is
one line, and that an editable install rebuilds on import after an edit
and runs no SCons when nothing changed (real-compiler checks:
tests/ship/test_ship_compile.py)."""

import importlib.util
import json
import os
import sys
import tarfile

import pytest
from packaging.specifiers import SpecifierSet

from support import ship_helpers as ship
from support.scons_helpers import compiled

pytestmark = pytest.mark.slow  # pip and SCons subprocesses (~1 min in all); no compiler

NAME = "demo_ops"


def _torch_version():
    sys.path.insert(0, os.path.join(ship.REPO, "site_scons"))
    from autograd_scons.buildenv import torch_flags
    return torch_flags.read_facts(list(importlib.util.find_spec("torch").submodule_search_locations)[0])["version"]


TORCH = _torch_version()
MAJOR, MINOR = (int(x) for x in TORCH.split("+")[0].split(".")[:2])


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(tmp, PYTHONPATH, the project, its wheel, pip's output)."""
    tmp = tmp_path_factory.mktemp("ship")
    path = ship.this_checkout(tmp)
    return (tmp, path) + ship.new_wheel(tmp, NAME, path, f"CXX={ship.FAKE_CXX}")


@pytest.mark.compile
def test_the_wheel_holds_the_package_and_its_library_only(made):
    wheel = made[3]
    info = f"{NAME}-0.1.0.dist-info"
    assert os.path.basename(wheel) == f"{NAME}-0.1.0-cp{sys.version_info[0]}{sys.version_info[1]}-" \
        f"cp{sys.version_info[0]}{sys.version_info[1]}-linux_x86_64.whl"
    assert ship.wheel_names(wheel) == sorted([f"{NAME}/__init__.py", f"{NAME}/_C.so", f"{info}/METADATA",
                                              f"{info}/WHEEL", f"{info}/autograd_scons.json", f"{info}/RECORD"])
    # the variant record merge-wheels reads: this torch, CPU
    record = json.loads(ship.wheel_read(wheel, f"{info}/autograd_scons.json"))
    assert (record["variant"], record["torch"], record["torch_cuda"], record["library"]) == \
        (f"torch{MAJOR}.{MINOR}_cpu", TORCH, None, f"{NAME}/_C.so")
    with open(os.path.join(made[2], NAME, "__init__.py"), "rb") as f:
        assert ship.wheel_read(wheel, f"{NAME}/__init__.py") == f.read()
    with open(os.path.join(made[2], ship.BUILD, NAME, "_C.so"), "rb") as f:
        assert ship.wheel_read(wheel, f"{NAME}/_C.so") == f.read()
    record = ship.wheel_read(wheel, f"{info}/RECORD").decode().splitlines()
    assert sorted(line.split(",")[0] for line in record) == ship.wheel_names(wheel)


def test_requires_dist_pins_the_torch_minor_it_was_built_against(made):
    metadata = ship.wheel_read(made[3], f"{NAME}-0.1.0.dist-info/METADATA").decode().splitlines()
    pins = [line.split(": ", 1)[1] for line in metadata if line.startswith("Requires-Dist: ")]
    assert pins == [f"torch=={MAJOR}.{MINOR}.*"]
    spec = SpecifierSet(pins[0][len("torch"):])
    for ok in (TORCH, f"{MAJOR}.{MINOR}.0", f"{MAJOR}.{MINOR}.0+cpu", f"{MAJOR}.{MINOR}.1+cu130"):
        assert spec.contains(ok), ok
    for refused in (f"{MAJOR}.{MINOR + 1}.0", f"{MAJOR}.{MINOR - 1}.9", f"{MAJOR + 1}.{MINOR}.0"):
        assert not spec.contains(refused), refused
    with open(os.path.join(made[2], "pyproject.toml")) as f:  # build-system.requires: the span `new` wrote
        assert f'"torch>={MAJOR}.{MINOR},<{MAJOR}.{MINOR + 2}"' in f.read()


@pytest.mark.compile
def test_the_cpu_build_says_in_one_line_that_no_cuda_kernel_is_built(made):
    # a project without .cu sources says nothing; one with says it left them out
    assert "CUDA kernels" not in made[4]
    tmp, path = made[0], made[1]
    ship.new(tmp, "cuda_ops", path, "--cuda")
    wheel, proc = ship.pip_wheel(str(tmp / "cuda_ops"), str(tmp / "dist-cuda"), path, f"CXX={ship.FAKE_CXX}")
    lines = [line.strip() for line in (proc.stdout + proc.stderr).splitlines()
             if line.strip().startswith("autograd_scons: wheel")]
    assert lines == [f"autograd_scons: wheel without CUDA kernels (torch {TORCH} is a CPU-only build): "
                     "csrc/kernels_cuda.cu not built"]
    assert not any(n.endswith(".cu") for n in ship.wheel_names(wheel))


@pytest.mark.compile
def test_two_copies_of_the_project_give_the_same_wheel_bytes(made):
    tmp, path, project, wheel, _ = made
    other = ship.copy_project(project, tmp / "elsewhere" / "a" / "much" / "longer" / "path" / NAME)
    second, _ = ship.pip_wheel(other, str(tmp / "dist2"), path, f"CXX={ship.FAKE_CXX}")
    assert ship.wheel_names(second) == ship.wheel_names(wheel)
    assert ship.wheel_read(second, f"{NAME}/_C.so") == ship.wheel_read(wheel, f"{NAME}/_C.so")
    with open(wheel, "rb") as a, open(second, "rb") as b:
        assert a.read() == b.read()  # fixed timestamps, order and modes too


@pytest.mark.compile
def test_config_settings_reach_scons_and_python_0_is_a_py3_none_wheel(made):
    tmp, path, project = made[0], made[1], made[2]
    other = ship.copy_project(project, tmp / "no-python" / NAME)
    wheel, _ = ship.pip_wheel(other, str(tmp / "dist-nopy"), path, f"CXX={ship.FAKE_CXX}", "PYTHON=0", "PCH=0",
                              "-j=1")
    # no Python bindings: the library depends on no Python ABI, only on torch's minor (the pin)
    assert os.path.basename(wheel) == f"{NAME}-0.1.0-py3-none-linux_x86_64.whl"
    assert "Tag: py3-none-linux_x86_64" in ship.wheel_read(wheel, f"{NAME}-0.1.0.dist-info/WHEEL").decode()
    with open(os.path.join(other, ship.BUILD, "build.log")) as f:
        log = f.read()
    assert ".gch" not in log and "bindings_" not in log and "-ltorch_python" not in log
    assert compiled(log)


@pytest.mark.compile
def test_a_second_wheel_of_the_unchanged_project_compiles_nothing(made):
    tmp, path, project, wheel, _ = made
    again, _ = ship.pip_wheel(project, str(tmp / "dist-again"), path, f"CXX={ship.FAKE_CXX}")
    with open(os.path.join(project, ship.BUILD, "build.log")) as f:
        assert compiled(f.read()) == []
    with open(wheel, "rb") as a, open(again, "rb") as b:
        assert a.read() == b.read()


@pytest.mark.compile
def test_a_wheel_built_from_the_sdist_has_the_same_files(made):
    tmp, path, project, wheel, _ = made
    code = "import sys; from autograd_scons import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    os.makedirs(tmp / "sdist")  # PEP 517: the frontend gives a folder that exists
    out = ship.run([sys.executable, "-c", code, str(tmp / "sdist")], project, ship.environ(path))
    sdist = str(tmp / "sdist" / out.stdout.strip().splitlines()[-1])
    with tarfile.open(sdist) as tar:
        names = sorted(m.name.split("/", 1)[1] for m in tar.getmembers())
    assert names == sorted(["PKG-INFO", "README.md", "SConstruct", "pyproject.toml", "native_functions.yaml",
                            "derivatives.yaml", "csrc/kernels.cpp", f"{NAME}/__init__.py",
                            f"tests/test_{NAME}.py"])
    from_sdist, _ = ship.pip_wheel(sdist, str(tmp / "dist-sdist"), path, f"CXX={ship.FAKE_CXX}")
    assert ship.wheel_names(from_sdist) == ship.wheel_names(wheel)
    with open(from_sdist, "rb") as a, open(wheel, "rb") as b:
        assert a.read() == b.read()  # built in pip's temporary folder: same library bytes, same archive


def _files(root):
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names)


def test_new_writes_the_project_and_with_cuda_its_kernel(made):
    tmp, path = made[0], made[1]
    os.makedirs(tmp / "listing")
    ship.new(tmp / "listing", "cpu_ops", path)
    ship.new(tmp / "listing", "gpu_ops", path, "--cuda")
    common = [".gitignore", "README.md", "SConstruct", "csrc/kernels.cpp", "derivatives.yaml",
              "native_functions.yaml", "pyproject.toml"]
    assert _files(tmp / "listing" / "cpu_ops") == sorted(common + ["cpu_ops/__init__.py", "tests/test_cpu_ops.py"])
    assert _files(tmp / "listing" / "gpu_ops") == sorted(common + ["gpu_ops/__init__.py", "tests/test_gpu_ops.py",
                                                                   "csrc/kernels_cuda.cu", "tests/test_gpu_ops_cuda.py"])
    with open(tmp / "listing" / "cpu_ops" / "native_functions.yaml") as f:
        cpu = f.read()
    with open(tmp / "listing" / "gpu_ops" / "native_functions.yaml") as f:
        gpu = f.read()
    assert "CUDA:" not in cpu and "    CUDA: scaled_square_cuda\n" in gpu and "--cuda" not in gpu
    assert "extname" not in cpu + gpu and "- func: gpu_ops::scaled_square(Tensor self, Scalar alpha)" in gpu


def test_new_refuses_an_existing_folder_or_a_bad_name_writing_nothing(made):
    tmp, path = made[0], made[1]
    before = sorted(os.listdir(tmp))
    proc = ship.new(tmp, NAME, path, check=False)
    assert proc.returncode != 0 and proc.stderr.strip().count("\n") == 0
    assert f"{NAME} already exists" in proc.stderr
    for bad in ("3ops", "my-ops", "class"):
        proc = ship.new(tmp, bad, path, check=False)
        assert proc.returncode != 0 and "is not a Python identifier" in proc.stderr, proc.stderr
        assert proc.stderr.strip().count("\n") == 0
    assert sorted(os.listdir(tmp)) == before


@pytest.mark.parametrize("kind", ["pin", pytest.param("span", marks=pytest.mark.compile)])
def test_a_build_environment_with_another_torch_is_one_line(made, kind):
    tmp, path, project = made[0], made[1], made[2]
    wanted = f"=={MAJOR}.{MINOR + 1}.*" if kind == "pin" else f">={MAJOR}.{MINOR + 1},<{MAJOR}.{MINOR + 3}"
    other = ship.edited_copy(project, tmp / f"wrong-{kind}" / NAME, "pyproject.toml",
                             f'"torch>={MAJOR}.{MINOR},<{MAJOR}.{MINOR + 2}"', f'"torch{wanted}"')
    wheel, proc = ship.pip_wheel(other, str(tmp / f"dist-wrong-{kind}"), path, f"CXX={ship.FAKE_CXX}", check=False)
    assert wheel is None and proc.returncode != 0
    lines = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if "autograd_scons: error" in line]
    found = f"autograd_scons: error: torch {TORCH} in the build environment ({sys.executable}) is "
    assert lines == [found + (f"not the build-system.requires pin torch{wanted}: install torch{wanted} there, or "
                              f"change the pin in pyproject.toml to torch=={MAJOR}.{MINOR}.*" if kind == "pin" else
                              f"outside the build-system.requires span torch{wanted}: install a torch in that span "
                              "there, or widen the span in pyproject.toml")]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not os.path.exists(os.path.join(other, ship.BUILD, NAME))  # nothing built


def test_a_failed_wheel_build_is_the_first_error_and_the_log_without_a_traceback(made):
    tmp, path, project = made[0], made[1], made[2]
    other = ship.edited_copy(project, tmp / "broken" / NAME, "derivatives.yaml", "self: grad", "selfie: grad")
    wheel, proc = ship.pip_wheel(other, str(tmp / "dist-broken"), path, f"CXX={ship.FAKE_CXX}", check=False)
    out = proc.stdout + proc.stderr
    assert wheel is None and proc.returncode != 0
    [line] = [x.strip() for x in out.splitlines() if x.strip().startswith("autograd_scons: build failed: ")]
    assert "derivatives.yaml" in line and "selfie" in line, line
    assert f"full log: {os.path.join(other, ship.BUILD, 'build.log')}" in out
    assert "Traceback" not in out


@pytest.fixture(scope="module")
def editable(made):
    """(venv python, project, build folder, env): the project installed
    editable (pip install -e --no-build-isolation) into a venv."""
    tmp, path, project = made[0], made[1], made[2]
    project = ship.copy_project(project, tmp / "editable" / NAME)
    # --without-pip: ensurepip would take ~5 s; the outer pip (seen through
    # the venv's view of this interpreter's packages) installs into the venv it is run from.
    py = ship.venv_seeing_this_one(tmp / "venv", ship.environ(path))
    ship.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
              "-C", f"CXX={ship.FAKE_CXX}", "-e", project], tmp, ship.environ(path))
    build = os.path.join(project, ship.BUILD)
    return py, project, build, ship.environ(path)


# The stand-in library cannot be loaded: find_spec is the import up to
# running the package's __init__ (where the rebuild happens).
FIND = f"import importlib.util; s = importlib.util.find_spec({NAME!r}); print(s.origin, s.submodule_search_locations)"


def _log(build):
    with open(os.path.join(build, "build.log")) as f:
        return f.read()


@pytest.mark.compile
def test_an_unchanged_editable_import_runs_no_scons(editable):
    py, project, build, env = editable
    log_stat = os.stat(os.path.join(build, "build.log")).st_mtime_ns
    out = ship.run([py, "-c", FIND], "/", env).stdout
    assert out.startswith(os.path.join(project, NAME, "__init__.py"))
    assert os.path.join(build, NAME) in out  # the library's folder is on the package's path
    assert os.stat(os.path.join(build, "build.log")).st_mtime_ns == log_stat  # SCons never started


@pytest.mark.compile
def test_an_edited_formula_is_rebuilt_on_the_next_import(editable):
    py, project, build, env = editable
    path = os.path.join(project, "derivatives.yaml")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("grad * self * alpha * 2", "grad * alpha * self * 2"))
    ship.run([py, "-c", FIND], "/", env)
    log = _log(build)
    # the edited Function's TUs only (not the hand-written kernel), then the link
    assert compiled(log) and "kernels.os" not in compiled(log), log
    assert f"-o {ship.BUILD}/{NAME}/_C.so " in log
    log_stat = os.stat(os.path.join(build, "build.log")).st_mtime_ns
    ship.run([py, "-c", FIND], "/", env)  # and then nothing again
    assert os.stat(os.path.join(build, "build.log")).st_mtime_ns == log_stat


@pytest.mark.compile
def test_an_edited_kernel_source_is_rebuilt_on_the_next_import(editable):
    py, project, build, env = editable
    path = os.path.join(project, "csrc", "kernels.cpp")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("o[i] = a * in[i] * in[i];", "o[i] = in[i] * in[i] * a;"))
    ship.run([py, "-c", FIND], "/", env)
    assert compiled(_log(build)) == ["cache_key.os", "kernels.os"]  # the digest covers the kernel's source


@pytest.mark.compile
def test_a_failed_editable_rebuild_is_an_import_error_with_the_first_error(editable):
    py, project, build, env = editable
    path = os.path.join(project, "derivatives.yaml")
    with open(path) as f:
        good = f.read()
    try:
        with open(path, "w") as f:
            f.write(good.replace("self: grad", "selfie: grad"))
        proc = ship.run([py, "-c", FIND], "/", env, check=False)
        assert proc.returncode != 0
        last = proc.stderr.strip().splitlines()
        assert any(line.startswith("ImportError: editable demo_ops: build failed: ") and "derivatives.yaml" in line
                   and "selfie" in line for line in last), proc.stderr[-2000:]
        assert f"full log: {os.path.join(build, 'build.log')}" in proc.stderr
        # inside a build (its environment variable set) an import builds nothing
        quiet = ship.run([py, "-c", FIND], "/", dict(env, AUTOGRAD_SCONS_BUILDING="1"))
        assert quiet.returncode == 0
    finally:
        with open(path, "w") as f:
            f.write(good)
    ship.run([py, "-c", FIND], "/", env)
    with open(os.path.join(build, ".editable_stamp.json")) as f:
        assert json.load(f)["key"]["args"] == [f"CXX={ship.FAKE_CXX}"]
