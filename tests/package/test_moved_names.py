"""The modules that moved when `autograd_scons` became one package (commit
8af3fec) still import from their old place, as docs/embedding.md wrote
them until then: `from autograd_scons import torch_flags, verified_cache`
gives the modules of their new place, with one DeprecationWarning per old
name that names the new place and points at the line that used the old
name (site_scons/autograd_scons/moved_names.py).  Each check runs in a fresh interpreter:
the warning is once per process."""

import os
import subprocess
import sys

from autograd_scons import moved_names

# The old names, each imported as the earlier docs did; prints, per name,
# whether it is its new module and the warnings it raised (category, file,
# line, message), then the same import again (no second warning), then a
# name that never existed (an ImportError, as before).
PROBE = r'''
import importlib, json, sys, warnings
warnings.simplefilter("always")
out = {}
for old, homes in json.loads(sys.argv[1]).items():
    with warnings.catch_warnings(record=True) as caught:
        module = getattr(__import__("autograd_scons", fromlist=[old]), old)   # USES THE OLD NAME
    with warnings.catch_warnings(record=True) as again:
        getattr(__import__("autograd_scons", fromlist=[old]), old)
    news = [importlib.import_module("autograd_scons." + h) for h in homes]
    if len(news) == 1:
        same = module is news[0]
    else:   # split: every public name of each new module answers from the old one
        same = all(getattr(module, n) is getattr(m, n) for m in news for n in dir(m) if not n.startswith("_"))
    out[old] = {"same": same, "again": len(again),
                "warnings": [[w.category.__name__, w.filename, w.lineno, str(w.message)] for w in caught]}
try:
    from autograd_scons import never_was_a_module
except ImportError as e:
    out["never"] = str(e)
print(json.dumps(out))
'''

USE_LINE = next(i for i, line in enumerate(PROBE.splitlines(), 1) if line.endswith("# USES THE OLD NAME"))

# docs/embedding.md's host SConstruct before the one package (its import lines verbatim)
OLD_SCONSTRUCT = """\
import autograd_scons
from autograd_scons import torch_flags  # or set torch's include paths, libraries and defines yourself

env = Environment(tools=["default"])
env.Tool("autograd_functions", toolpath=[autograd_scons.TOOLPATH])

from autograd_scons import verified_cache  # optional: a CacheDir whose entries are checked before use
env.CacheDir("cache", verified_cache.VerifiedCacheDir)
print("old imports:", torch_flags.configure.__module__, verified_cache.VerifiedCacheDir.__module__)
"""


def test_every_moved_name_imports_from_its_old_place_with_one_warning(tmp_path):
    import json
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    proc = subprocess.run([sys.executable, str(probe), json.dumps(moved_names.MOVED)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out.pop("never") == "cannot import name 'never_was_a_module' from 'autograd_scons' " \
        f"({os.path.join(os.path.dirname(moved_names.__file__), '__init__.py')})"
    assert set(out) == set(moved_names.MOVED)
    for old, seen in out.items():
        assert seen["same"], old
        assert seen["again"] == 0, old
        [(category, filename, line, message)] = seen["warnings"]
        assert category == "DeprecationWarning"
        assert (filename, line) == (str(probe), USE_LINE)   # the import's line, not the package's
        assert message.startswith(f"autograd_scons.{old} moved to {moved_names.new_place(old)}: ")


def test_an_sconstruct_written_from_the_earlier_docs_still_builds(tmp_path):
    (tmp_path / "SConstruct").write_text(OLD_SCONSTRUCT)
    proc = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "-c",
                           "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())", "-Q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "old imports: autograd_scons.buildenv.torch_flags autograd_scons.buildenv.verified_cache" in proc.stdout
    warned = [line for line in proc.stderr.splitlines() if "DeprecationWarning" in line]
    sconstruct = tmp_path / "SConstruct"
    assert warned == [
        f"{sconstruct}:2: DeprecationWarning: autograd_scons.torch_flags moved to "
        "autograd_scons.buildenv.torch_flags: `from autograd_scons.buildenv import torch_flags` "
        "(the old name will be removed)",
        f"{sconstruct}:7: DeprecationWarning: autograd_scons.verified_cache moved to "
        "autograd_scons.buildenv.verified_cache: `from autograd_scons.buildenv import verified_cache` "
        "(the old name will be removed)"]
