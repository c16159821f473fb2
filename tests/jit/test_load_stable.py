"""load(..., stable=): the stable target through load() (jit/loader.py):
a bad target is one line before anything is built; the stable example's
kernels built by the real g++ (compile tier), its generated autograd imported
by load() after the library (the fake kernel the yaml names found beside the
yaml): gradients and forward AD right."""

import os
import shutil

import pytest

from support.load_helpers import environ, run
from support.spec_facts import REPO

from autograd_scons.jit.load_request import LoadError
from autograd_scons.jit.loader import load

FIXTURE = os.path.join(REPO, "tests", "fixtures", "stable_ext")


def call(tmp_path, **more):
    shutil.copytree(FIXTURE, tmp_path / "ext")
    ext = str(tmp_path / "ext")
    return dict({"name": "stableops_ld", "native_functions": os.path.join(ext, "native_functions.yaml"),
                 "derivatives": os.path.join(ext, "derivatives.yaml"),
                 "sources": [os.path.join(ext, "csrc", "kernels.cpp")],
                 "build_directory": str(tmp_path / "build")}, **more)


def test_a_bad_target_is_one_line_before_any_build(tmp_path):
    # (in this process: load() checks its keywords into the request before any build)
    args = call(tmp_path, stable="2.8")
    with pytest.raises(LoadError) as e:
        load(**args)
    assert str(e.value) == ("load(stableops_ld): stable='2.8': the stable ABI starts at torch 2.9; name a "
                            "version from there on, like '2.10'")
    assert not os.path.exists(tmp_path / "build")


CHECK = """
x = torch.randn(5, dtype=torch.double, requires_grad=True)
assert torch.autograd.gradcheck(lambda a: ops.scale(a, 1.5), (x,))
assert torch.autograd.gradgradcheck(ops.sumsq, (x,))
t = torch.randn(5, dtype=torch.double)
assert torch.allclose(torch.func.jvp(ops.sumsq, (x.detach(),), (t,))[1], (2 * x.detach() * t).sum())
print("CHECKED")
"""


@pytest.mark.compile
def test_the_stable_example_loads_with_its_python_autograd(tmp_path):
    proc = run(call(tmp_path, stable=True), environ(cxx="g++"), then=CHECK, fresh=True)
    assert "LOADED" in proc.stdout and "CHECKED" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert os.path.isfile(tmp_path / "build" / "gen" / "stable" / "stableops_autograd.py")


def test_python_helpers_reach_the_request_as_a_path_and_need_stable(tmp_path, monkeypatch):
    """load(..., python_helpers=) names the stable formulas' own Python
    helpers: the request holds its absolute path (load()'s stamp records
    that file, jit/sconstruct.py), and without stable= it is one line before
    any build."""
    from autograd_scons.jit.load_request import LoadOptions, LoadRequest
    args = call(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h.py").write_text("def f(x):\n    return x\n")
    request = LoadRequest.of(args["name"], args["native_functions"], args["derivatives"], args["sources"], None,
                             LoadOptions(stable=True, python_helpers="h.py"))
    assert request.functions.python_helpers == str(tmp_path / "h.py")
    with pytest.raises(LoadError) as e:
        load(**dict(args, python_helpers="h.py"))
    assert "python_helpers='" in str(e.value) and "give stable=" in str(e.value)
    assert not os.path.exists(tmp_path / "build")
