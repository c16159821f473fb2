"""What a stable-target build rebuilds (tool/stable_build.py), counted with
the stand-in compiler (support/fakecxx.sh): a formula edit regenerates that
op's Python, beside the library too, and compiles and links nothing; a
kernel edit compiles that kernel's object alone; a schema edit the
registration TU alone.  The JSON build report names the registration's
kind (`stable`) and the op the formula edit regenerated.  (Three SCons runs:
in the compile tier; the real compiler's counts: tests/example/test_stable_example.py.)"""

import json
import os
import shutil

import pytest

from support.scons_helpers import FAKE_CXX, REPO, compiled, edit, linked, scons

pytestmark = pytest.mark.compile

SITE = os.path.join(REPO, "site_scons")
FIXTURE = os.path.join(REPO, "tests", "fixtures", "stable_ext")
SCONSTRUCT = f"""
import os
import sys
sys.path.insert(0, {SITE!r})   # this checkout's package, whatever copy is installed
DefaultEnvironment(tools=[])
env = Environment(tools=["gcc", "g++", "gnulink", "ar"], CXX=ARGUMENTS["CXX"],
                  ENV={{"PATH": os.environ.get("PATH", "")}})
env.SConsignFile("build/.sconsign")
env.Replace(LINK="$CXX")
env.Tool("autograd_functions", toolpath=[{os.path.join(SITE, "autograd_scons", "site_tools")!r}])
objects = env.AutogradFunctions("build/gen", native_functions="spec/native_functions.yaml",
                                derivatives="spec/derivatives.yaml", stable="2.10",
                                pch_sources=["spec/csrc/kernels.cpp"])
Default(env.SharedLibrary("build/stableops_ext", objects, SHLIBPREFIX=""))
"""


def run(root, report=None):
    return scons(root, f"CXX={FAKE_CXX}", *([f"--autograd-report={report}"] if report else [])).stdout


def test_what_each_edit_rebuilds(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "spec")
    (tmp_path / "SConstruct").write_text(SCONSTRUCT)
    first = run(tmp_path)
    assert compiled(first) == ["kernels.os", "registration.os"]
    beside = tmp_path / "build" / "stableops_ext_autograd.py"
    assert beside.exists() and (tmp_path / "build" / "stable_autograd_runtime.py").exists()

    edit(tmp_path / "spec" / "derivatives.yaml", "self: grad * alpha", "self: alpha * grad")
    out = run(tmp_path, tmp_path / "report.json")
    assert compiled(out) == [] and linked(out, "stableops_ext.so") is None
    assert "alpha * grad" in beside.read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    folder, = report["folders"]
    assert folder["tus"] == [{"path": "stable/registration.cpp", "kind": "stable"}]
    assert [(u["name"], u["state"]) for u in folder["units"] if u["state"] == "regenerated"] == \
        [("stableops::scale", "regenerated")]
    assert sorted(o["kind"] for o in report["objects"]) == ["stable", "user"]

    edit(tmp_path / "spec" / "csrc" / "kernels.cpp", "tensors only", "tensors, nothing else")
    assert compiled(run(tmp_path)) == ["kernels.os"]

    edit(tmp_path / "spec" / "native_functions.yaml", "stableops::scale(Tensor self, float alpha)",
         "stableops::scale(Tensor self, float alpha=1.0)")
    edit(tmp_path / "spec" / "derivatives.yaml", "scale(Tensor self, float alpha)", "scale(Tensor self, float alpha=1.0)")
    assert compiled(run(tmp_path)) == ["registration.os"]


def test_the_formulas_own_helpers_reach_the_library_and_an_edit_compiles_nothing(tmp_path):
    """python_helpers= through the builder: the module the formulas call is
    found from the SConstruct's folder and copied beside the library; an edit
    of a helper's body rewrites that copy alone (no compile, no link, no op
    regenerated); without the keyword the same formula is refused at its line."""
    shutil.copytree(FIXTURE, tmp_path / "spec")
    (tmp_path / "spec" / "helpers.py").write_text("def scaled(grad, alpha):\n    return grad * alpha\n")
    edit(tmp_path / "spec" / "derivatives.yaml", "self: grad * alpha", "self: stableops::scaled(grad, alpha)")
    (tmp_path / "SConstruct").write_text(SCONSTRUCT.replace('stable="2.10",', 'stable="2.10", '
                                                            'python_helpers="spec/helpers.py",'))
    assert compiled(run(tmp_path)) == ["kernels.os", "registration.os"]
    copy = tmp_path / "build" / "stable_autograd_own_helpers.py"
    assert copy.read_text() == (tmp_path / "spec" / "helpers.py").read_text()
    assert "scaled" in (tmp_path / "build" / "stableops_ext_autograd.py").read_text()

    edit(tmp_path / "spec" / "helpers.py", "return grad * alpha", "return alpha * grad")
    out = run(tmp_path)
    assert compiled(out) == [] and linked(out, "stableops_ext.so") is None
    assert "alpha * grad" in copy.read_text()

    (tmp_path / "SConstruct").write_text(SCONSTRUCT)
    refused = scons(tmp_path, f"CXX={FAKE_CXX}", check=False)
    assert refused.returncode == 2 and "derivatives.yaml:" in refused.stdout + refused.stderr
    assert "python_helpers=" in refused.stdout + refused.stderr
