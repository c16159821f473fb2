"""From nothing to an installed wheel, with the real compiler (README: Ship
it): `python -m autograd_scons new` into a temporary folder, `pip wheel
--no-build-isolation` of the result, the wheel installed into a fresh venv
that holds only torch (from the local wheel folder pip is configured with),
pytest and the wheel, the package imported from a folder far from the
project, its op gradchecked, and the project's own tests (gradcheck,
opcheck, torch.compile, forward AD) passing in that venv.  The wheel's
library holds no path of the folder it was built in."""

import os
import subprocess
import sys

import pytest

from support import ship_helpers as ship

pytestmark = [pytest.mark.compile, pytest.mark.slow]  # ~40 s of g++, a venv with torch (~1 min)

NAME = "first_ops"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, the project, the wheel, a folder far from both)."""
    tmp = tmp_path_factory.mktemp("ship-compile")
    project, wheel, _ = ship.new_wheel(tmp, NAME, ship.this_checkout(tmp))
    venv = tmp / "venv"
    ship.run([sys.executable, "-m", "venv", venv], tmp, ship.environ(""))
    py = str(venv / "bin" / "python")
    import torch
    version = torch.__version__.split("+")[0]
    proc = ship.run([py, "-m", "pip", "install", "-q", f"torch=={version}", "pytest"], tmp, ship.environ(""),
                    check=False)
    if proc.returncode != 0:
        pytest.skip(f"torch=={version} could not be installed into a fresh venv (pip's find-links or index "
                    f"holds none): {proc.stderr.strip().splitlines()[-1:]}")
    # the pin must accept the torch there: no --no-deps, and no index to fall back on
    ship.run([py, "-m", "pip", "install", "-q", "--no-index", wheel], tmp, ship.environ(""))
    far = tmp / "far" / "away"
    os.makedirs(far)
    return py, project, wheel, str(far)


def test_the_installed_wheel_imports_far_from_the_project_and_gradchecks(installed):
    py, project, _, far = installed
    code = (f"import sys, torch, {NAME}\n"
            f"assert 'site-packages' in {NAME}.__file__ and {NAME}.__file__.startswith(sys.prefix), {NAME}.__file__\n"
            "x = torch.randn(4, 3, dtype=torch.double, requires_grad=True)\n"
            f"assert torch.autograd.gradcheck(lambda t: torch.ops.{NAME}.scaled_square(t, 0.75), (x,))\n"
            f"y = torch.ops.{NAME}.scaled_square(x, 0.75)\n"
            "torch.testing.assert_close(y, 0.75 * x * x)\n"
            "print(type(y.grad_fn).__name__)")
    proc = ship.run([py, "-c", code], far, ship.environ(""))
    assert proc.stdout.split() == ["ScaledSquareBackward0"]
    # only torch, its dependencies, pytest and the wheel: not this project's tooling
    listed = ship.run([py, "-m", "pip", "list", "--format=freeze"], far, ship.environ("")).stdout.lower()
    assert "autograd-functions-scons" not in listed and "scons" not in listed


def test_the_new_projects_own_tests_pass_against_the_installed_wheel(installed):
    py, project, _, far = installed
    proc = ship.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(project, "tests")], far,
                    ship.environ(""), check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "5 passed" in proc.stdout


def test_no_build_folder_path_is_in_the_library(installed):
    _, project, wheel, _ = installed
    library = ship.wheel_read(wheel, f"{NAME}/_C.so")
    strings = subprocess.run(["strings", "-n", "6"], input=library, capture_output=True, check=True).stdout
    assert os.path.dirname(project).encode() not in strings
    assert b"/tmp" not in strings and b"pytest-of" not in strings
    import torch  # nor the build environment's torch (pip's isolated one is a temporary folder)
    assert os.path.dirname(torch.__file__).encode() not in strings
    assert b"$ORIGIN/../torch/lib" in strings  # torch's libraries found beside the package, not where it was built


@pytest.fixture(scope="module")
def editable(installed, tmp_path_factory):
    """(venv python, project, env): the same project installed editable into
    a venv that sees this checkout's tooling (PYTHONPATH) and the system's
    torch; the wheel's build folder is reused, so nothing compiles here."""
    _, project, _, far = installed
    tmp = tmp_path_factory.mktemp("ship-editable")
    path = ship.this_checkout(tmp)
    py = ship.venv_seeing_this_one(tmp / "venv", ship.environ(path), pip=True)
    proc = ship.run([py, "-m", "pip", "install", "-v", "--no-build-isolation", "--no-deps", "--no-index",
                     "-C", ship.TEST_OPT, "-e", project], tmp, ship.environ(path))   # (the wheel's flags)
    assert " -c " not in proc.stdout  # the wheel's objects: no compile
    return py, project, ship.environ(path)


GRADCHECK = (f"import torch, {NAME}\n"
             "x = torch.randn(3, dtype=torch.double, requires_grad=True)\n"
             f"print(torch.autograd.gradcheck(lambda t: {NAME}.ops.scaled_square(t, 0.5), (x,), raise_exception=False))")


def test_the_editable_import_picks_up_a_formula_edit_and_reports_a_compiler_error(editable, installed):
    py, project, env = editable
    far = installed[3]
    assert ship.run([py, "-c", GRADCHECK], far, env).stdout.split()[-1:] == ["True"]
    derivatives, kernels = os.path.join(project, "derivatives.yaml"), os.path.join(project, "csrc", "kernels.cpp")
    with open(derivatives) as f:
        good_formula = f.read()
    with open(kernels) as f:
        good_kernel = f.read()
    try:
        with open(derivatives, "w") as f:  # a wrong gradient: picked up by the next import
            f.write(good_formula.replace("grad * self * alpha * 2", "grad * self * alpha * 3"))
        assert ship.run([py, "-c", GRADCHECK], far, env).stdout.split()[-1:] == ["False"]
        with open(kernels, "w") as f:
            f.write(good_kernel.replace("o[i] = a * in[i] * in[i];", "o[i] = a * in[i] * undeclared;"))
        proc = ship.run([py, "-c", GRADCHECK], far, env, check=False)
        assert proc.returncode != 0
        [line] = [x for x in proc.stderr.splitlines() if x.startswith("ImportError: ")]
        assert line.startswith(f"ImportError: editable {NAME}: build failed: csrc/kernels.cpp:") and \
            "error:" in line and "undeclared" in line, proc.stderr[-2000:]
        assert f"full log: {os.path.join(project, ship.BUILD, 'build.log')}" in proc.stderr
    finally:
        with open(derivatives, "w") as f:
            f.write(good_formula)
        with open(kernels, "w") as f:
            f.write(good_kernel)
    assert ship.run([py, "-c", GRADCHECK], far, env).stdout.split()[-1:] == ["True"]
