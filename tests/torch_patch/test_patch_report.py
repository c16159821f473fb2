"""patch-torch's JSON build report ($AUTOGRAD_REPORT, docs/ci.md): the
edited Function's reason and its one compile, then, unchanged, a report
that no build ran.  The stand-in compiler (tests/support/fakecxx.sh): the
report is what is checked, not the patch (tests/torch_patch/test_patch_torch.py
runs it, compiled)."""

import os
import sys

import pytest

from support.patch_helpers import compiled, edited_specs, environ, patch_torch
from support.scons_helpers import FAKE_CXX

from autograd_scons.build_report import document

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="patching libtorch needs ELF (Linux)")

SIN = ("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n",
       "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj() * 3\n")


@pytest.mark.compile
def test_patch_torch_reports_the_edited_function_and_then_no_build(tmp_path):
    env = environ(tmp_path, CXX=FAKE_CXX, AUTOGRAD_REPORT=str(tmp_path / "patch.json"))
    specs = edited_specs(tmp_path, SIN)
    proc = patch_torch(env, tmp_path / "out", "--derivatives", specs)
    assert proc.returncode == 0, proc.stderr
    doc = document.read(str(tmp_path / "patch.json"))
    assert (doc["entry"], doc["status"]) == ("patch-torch", "ok")
    units = {u["name"]: (u["state"], u["reason"]) for u in doc["folders"][0]["units"]}
    assert units == dict.fromkeys(("SinBackward0", "ForeachSinBackward0"), ("regenerated", "no_manifest"))
    # the Functions' TU, and the TU that reaches libtorch's local helpers (torch_patch/reach_locals.py)
    assert sorted(os.path.basename(o["path"]) for o in doc["objects"] if o["fate"] == "compiled") == \
        ["bucket_0.os", "libtorch_locals.os"]
    assert doc["summary"]["compiled"] == compiled(proc) == 2

    again = patch_torch(env, tmp_path / "out", "--derivatives", specs)
    assert again.returncode == 0 and "up to date" in again.stdout
    doc = document.read(str(tmp_path / "patch.json"))
    assert (doc["entry"], doc["status"], doc["summary"]["compiled"]) == ("patch-torch", "up_to_date", 0)
