"""The generated pyproject.toml under pip's default, isolated build: pip
installs `build-system.requires` (autograd-functions-scons, from a wheel of
this checkout, and `torch==X.Y.*`, from pip's wheel folder or index) into a
temporary environment and builds there, with the stand-in compiler.  The
wheel has the same files and pin as a --no-build-isolation one; without
torch in `build-system.requires` the build is one line naming what is
missing and how to fix it.  Needs this checkout's dependencies (scons,
PyYAML, xxhash) and torch where pip finds them: without, skipped."""

import os
import sys

import pytest


from support import ship_helpers as ship

# The full tier (conftest.py): pip installs torch into two isolated environments (~15 s each).
pytestmark = [pytest.mark.slow, pytest.mark.compile]

NAME = "iso_ops"


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    """(tmp, a folder holding a wheel of this checkout, the project)."""
    tmp = tmp_path_factory.mktemp("isolated")
    src = ship.copy_checkout(tmp / "checkout")
    wheels = str(tmp / "tool")
    ship.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheels, src],
             tmp, ship.environ(""))
    path = ship.this_checkout(tmp)
    import torch  # one minor (`new --torch`): the default span would have pip install the newest torch in it
    ship.new(tmp, NAME, path, "--torch", "==" + ".".join(torch.__version__.split(".")[:2]) + ".*")
    return tmp, wheels, str(tmp / NAME)


def _isolated_wheel(project, out, wheels):
    cmd = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--find-links", wheels, "-w", out,
           "-C", f"CXX={ship.FAKE_CXX}", project]
    return ship.run(cmd, os.path.dirname(project), ship.environ(""), check=False)


def test_an_isolated_build_installs_the_pinned_torch_and_gives_the_same_wheel(tool):
    tmp, wheels, project = tool
    proc = _isolated_wheel(project, str(tmp / "dist"), wheels)
    if proc.returncode != 0 and "No matching distribution" in proc.stdout + proc.stderr:
        pytest.skip("pip cannot find the build requirements (scons, PyYAML, xxhash, torch) offline: "
                    + (proc.stdout + proc.stderr).strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [wheel] = [os.path.join(tmp / "dist", n) for n in os.listdir(tmp / "dist")]
    assert "pip-build-env" in proc.stdout + proc.stderr  # it really was built in pip's own environment
    local, _ = ship.pip_wheel(ship.copy_project(project, tmp / "local" / NAME), str(tmp / "dist-local"),
                              ship.this_checkout(tmp), f"CXX={ship.FAKE_CXX}")
    assert ship.wheel_names(wheel) == ship.wheel_names(local)
    meta = f"{NAME}-0.1.0.dist-info/METADATA"
    assert ship.wheel_read(wheel, meta) == ship.wheel_read(local, meta)


def test_an_isolated_build_without_torch_is_one_line(tool):
    tmp, wheels, project = tool
    other = ship.copy_project(project, tmp / "no-torch" / NAME)
    path = os.path.join(other, "pyproject.toml")
    with open(path) as f:
        text = f.read()
    pin = text.split('"torch==', 1)[1].split('"', 1)[0]
    with open(path, "w") as f:
        f.write(text.replace(f', "torch=={pin}"', ""))
    proc = _isolated_wheel(other, str(tmp / "dist-no-torch"), wheels)
    if "No matching distribution" in proc.stdout + proc.stderr:
        pytest.skip("pip cannot find the build requirements (scons, PyYAML, xxhash) offline")
    assert proc.returncode != 0
    lines = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if "autograd_scons: error" in line]
    assert len(lines) == 1 and lines[0].startswith("autograd_scons: error: no torch in the build environment ("), lines
    assert lines[0].endswith("add torch==X.Y.* to build-system.requires in pyproject.toml (isolated builds), "
                             "or install torch and build with --no-build-isolation")
    assert "Traceback" not in proc.stdout + proc.stderr


def test_the_tools_wheel_carries_every_template(tool):
    """`python -m autograd_scons new` from an installed autograd-functions-scons:
    its templates are package data (setup.py), not packages."""
    [wheel] = [os.path.join(tool[1], n) for n in os.listdir(tool[1])]
    templates = os.path.join(ship.REPO, "site_scons", "autograd_scons", "ship", "templates")
    expected = sorted("autograd_scons/ship/templates/" + os.path.relpath(os.path.join(d, n), templates)
                      for d, _, names in os.walk(templates) for n in names if "__pycache__" not in d)
    names = ship.wheel_names(wheel)
    assert [n for n in names if n.startswith("autograd_scons/ship/templates/")] == expected
    assert "autograd_scons/__main__.py" in names and "autograd_scons/build_meta.py" in names
