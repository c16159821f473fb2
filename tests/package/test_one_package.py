"""One installed package, one name for every module (issue 35): every
module of `autograd_scons` imported in one process, and an SCons build of
the example, hold each of the package's files in `sys.modules` under one
name only, the package's (`autograd_scons.buildenv.torch_flags`, never a
bare `torch_flags` beside it), and import no top-level `codegen`."""

import json
import os
import subprocess
import sys

import pytest

from support.scons_helpers import TINY_ARGS, clone
from support.spec_facts import REPO

# Run in a fresh interpreter: imports every module of the package found in
# site_scons/autograd_scons/ (its sub-packages, site_tools/ and codegen/, the
# generator), then prints {file: [names]} for the package's files.
IMPORT_ALL = r"""
import importlib, json, os, sys
site = os.path.join(sys.argv[1], "site_scons")
sys.path.insert(0, site)
import autograd_scons
assert os.path.realpath(autograd_scons.__file__) == os.path.realpath(os.path.join(site, "autograd_scons", "__init__.py")), \
    autograd_scons.__file__
skip = {"autograd_scons.jit.sconstruct", "autograd_scons.torch_patch.patch_sconstruct"}   # run by SCons, not imported
for folder, subdirs, names in os.walk(os.path.join(site, "autograd_scons")):
    rel = os.path.relpath(folder, site)
    subdirs[:] = [d for d in subdirs if d != "__pycache__" and os.path.join(rel, d) != os.path.join("autograd_scons", "ship", "templates")]
    for n in names:
        if n.endswith(".py"):
            name = ".".join(rel.split(os.sep) + ([] if n == "__init__.py" else [n[:-3]]))
            if name not in skip and not name.endswith("__main__"):
                importlib.import_module(name)
""" + "\n" + r"""
print(json.dumps(FILES()))
"""

FILES = r"""
import sys as _sys
_ROOT = _sys.argv[1]


def FILES():
    import os, sys
    roots = [os.path.realpath(os.path.join(_ROOT, "site_scons")) + os.sep]
    out = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and os.path.realpath(path).startswith(tuple(roots)):
            out.setdefault(os.path.realpath(path), []).append(name)
    return out
"""


def twice(files):
    """The files held under a name other than the package's, or under two.
    SCons imports a tool's file under the tool's name (`nvcc`): site_tools/
    holds only the shims that name the package's modules, so those count once."""
    shims = os.sep + os.path.join("autograd_scons", "site_tools") + os.sep
    return {path: names for path, names in files.items() if len(names) > 1 or shims not in path and
            not all(n == "autograd_scons" or n.startswith("autograd_scons.") for n in names)}


@pytest.mark.compile
def test_every_module_imported_has_one_name():
    code = FILES + IMPORT_ALL
    proc = subprocess.run([sys.executable, "-c", code, REPO], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(files) > 60, len(files)    # the whole package was imported
    assert twice(files) == {}
    assert "codegen" not in sys.modules


@pytest.mark.compile
def test_an_scons_build_holds_each_module_under_one_name(tmp_path):
    """SCons puts site_scons/ on sys.path: every module is imported through
    it, as the package's, and the top-level link codegen/ gives no second name."""
    repo = clone(tmp_path / "repo")
    code = FILES + ("import atexit, json, sys\n"
                    "def bare():\n"
                    "    try:\n        import codegen\n    except ImportError as e:\n        return str(e)\n"
                    "atexit.register(lambda: open('modules.json', 'w').write(json.dumps(FILES())))\n"
                    "atexit.register(lambda: open('bare.txt', 'w').write(str(bare())))\n"
                    "sys.argv[1:2] = []\n"
                    "from SCons.Script.Main import main\nmain()")
    proc = subprocess.run([sys.executable, "-c", code, repo, "-Q", *TINY_ARGS], cwd=repo, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    with open(os.path.join(repo, "modules.json")) as f:
        files = json.load(f)
    assert any("autograd_scons.codegen.engine.incremental" in names for names in files.values())
    assert twice(files) == {}
    # the generator has one name: from the checkout's root (on sys.path here), `codegen` is refused
    with open(os.path.join(repo, "bare.txt")) as f:
        assert f.read().startswith("the generator is `autograd_scons.codegen`")
