"""The wheel backend's JSON build report (docs/ci.md): `-C AUTOGRAD_REPORT=path`
(pip's config settings, SCons variables: relative to the project) or the
environment variable.  The backend is called as pip calls it, in a
subprocess in the project's folder; the stand-in compiler."""

import os
import subprocess
import sys

import pytest

from support import ship_helpers as ship

from autograd_scons.build_report import document

BUILD_WHEEL = "import sys, json\nfrom autograd_scons import build_meta\n" \
              "print(build_meta.build_wheel(sys.argv[1], json.loads(sys.argv[2])))"


@pytest.mark.compile
def test_the_backend_writes_the_report_its_config_settings_ask_for(tmp_path):
    path = ship.this_checkout(tmp_path)
    ship.new(tmp_path, "report_ops", path)
    project = tmp_path / "report_ops"
    os.makedirs(tmp_path / "dist")   # (PEP 517: the frontend gives a folder that exists)
    settings = '{"CXX": "%s", "AUTOGRAD_REPORT": "reports/wheel.json"}' % ship.FAKE_CXX
    proc = subprocess.run([sys.executable, "-c", BUILD_WHEEL, str(tmp_path / "dist"), settings], cwd=project,
                          capture_output=True, text=True, env=ship.environ(path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = document.read(os.path.join(project, "reports", "wheel.json"))
    assert (doc["entry"], doc["status"]) == ("backend", "ok")
    assert {o["kind"] for o in doc["objects"]} == {"bucket", "binding", "digest", "user"}
    assert doc["summary"]["compiled"] == len(doc["objects"]) > 0
    assert doc["folders"][0]["specs"]["derivatives"] == os.path.join(project, "derivatives.yaml")
