"""The fast tier's nested venv (support/ship_helpers.py, venv_seeing_this_one)
sees the packages of the interpreter running the tests, also when that
interpreter is itself a venv: the editable install and pip's backend tests
run in it (issue 44, bug 1: on Python 3.11 its `.pth` line raised
NameError, so a venv nested in a venv saw only the base interpreter's
packages, and `tests/ship/test_ship.py` failed with `No module named
'xxhash'` where nothing was installed in the base interpreter).

Run under the Python in use: one site folder of this interpreter is a
folder the test makes, holding a module no other interpreter has (what a
package installed in the outer venv only is), beside the real ones."""

import site
import subprocess

from support import ship_helpers as ship


def test_the_nested_venv_imports_a_package_only_the_outer_one_has(tmp_path, monkeypatch):
    outer_only = tmp_path / "outer-site"
    outer_only.mkdir()
    (outer_only / "agf_outer_only.py").write_text("WHERE = 'outer'\n")
    real = site.getsitepackages()
    monkeypatch.setattr(site, "getsitepackages", lambda *a: real + [str(outer_only)])
    env = ship.environ("")
    py = ship.venv_seeing_this_one(tmp_path / "venv", env)
    proc = subprocess.run([py, "-c", "import agf_outer_only, xxhash; print(agf_outer_only.WHERE, xxhash.__file__)"],
                          capture_output=True, text=True, env=env, cwd="/")
    assert "Error processing line" not in proc.stderr, proc.stderr   # the .pth file ran
    assert proc.returncode == 0, proc.stderr
    import xxhash
    assert proc.stdout.split() == ["outer", xxhash.__file__]   # this interpreter's copy, not the base's
