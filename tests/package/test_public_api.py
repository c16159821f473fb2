"""The public surface of `autograd_scons` (issue 44): one error base that
every error meant for a person derives from, load()'s among them, each
keeping the standard base code catches today; a failed load() shows the
caller's frame and the one line, under every Python the package supports
(3.10 included); and the names each module exports are those the docs
name."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import autograd_scons
from support import forked
from support.spec_facts import REPO

# The standard base each error had before the common one: code catching
# that base must still catch it.
FORMER_BASES = {
    "SpecError": Exception, "SchemaError": ValueError, "WeakenError": Exception, "FolderError": OSError,
    "LockTimeout": TimeoutError, "BuildError": RuntimeError, "CudaConfigError": ValueError,
    "LoadError": RuntimeError, "MergeError": ValueError, "TagError": ValueError, "UnsafePath": ValueError,
    "BadSpan": ValueError, "PatchError": RuntimeError, "PatchNotInEffect": RuntimeError, "ElfError": ValueError,
    # since issue 51: the user's text (located by its caller) and an option's value
    "FormulaError": Exception, "OptionError": ValueError,
    # new with the base, each with the standard base of its kind: a report not read, a benchmark stopped
    "ReportError": ValueError, "BenchError": RuntimeError,
    # a name libtorch defines with no usable symbol (patch-torch, issue 54)
    "LocalError": ValueError,
    # a project's stable target misconfigured in pyproject.toml (issue 59): an option's value
    "StableConfigError": ValueError,
}

# Imports every module of the package (not the SConstructs SCons runs: jit/sconstruct.py, torch_patch/patch_sconstruct.py)
# and prints {qualified class: [its bases' names, derives from Error]} for each
# exception class defined in it.
_EXCEPTIONS = r"""
import importlib, inspect, json, sys
import autograd_scons
found = {}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    for cls_name, cls in vars(module).items():
        if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == name:
            found[f"{name}.{cls_name}"] = [[b.__name__ for b in cls.__mro__], issubclass(cls, autograd_scons.Error)]
print(json.dumps(found))
"""


def _module_names():
    from lint.test_import_cycles import _modules
    return sorted(m for m in _modules() if not m.endswith(("sconstruct", ".__main__")))


def test_every_error_derives_from_the_one_base_and_keeps_its_own():
    # (a process that has imported torch and nothing of this package, forked: support/forked.py)
    proc = forked.run(_EXCEPTIONS, _module_names(), dict(os.environ), cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    by_name = {q.rpartition(".")[2]: v for q, v in found.items()}
    assert set(by_name) == set(FORMER_BASES) | {"Error"}, sorted(found)
    outside = [q for q, (_, under) in found.items() if not under]
    assert outside == [], f"errors a user can see that are not autograd_scons.Error: {outside}"
    lost = [n for n, base in FORMER_BASES.items() if base.__name__ not in by_name[n][0]]
    assert lost == [], f"errors that no longer derive from their former base: {lost}"


def test_a_bad_load_is_caught_as_the_base(tmp_path):
    with pytest.raises(autograd_scons.Error, match=r"load\('my-ops'\): the name must be a Python identifier"):
        autograd_scons.load("my-ops", tmp_path / "nf.yaml", tmp_path / "d.yaml")
    with pytest.raises(RuntimeError):   # what it was caught as before
        autograd_scons.load("my-ops", tmp_path / "nf.yaml", tmp_path / "d.yaml")


# A failing call through errors.one_line_errors (load()'s decorator), raised
# while another exception was being handled; prints the frames the caller
# sees and the whole printed traceback.  Imports only this checkout's
# package (site_scons/ as `autograd_scons`): runs under any Python.
_FRAMES = r"""
import importlib.util, json, os, sys, traceback
site = os.path.join(sys.argv[1], "site_scons")
sys.path.insert(0, site)
from autograd_scons.base.errors import Error, one_line_errors

class Failed(Error):
    pass

def build():
    try:
        {}["missing"]
    except KeyError:
        raise Failed("load(myops): build failed: nf.yaml:3: entry 'x': bad")

@one_line_errors
def load():
    build()

try:
    load()
except Error as e:
    print(json.dumps({"frames": [[os.path.basename(f.filename), f.name] for f in traceback.extract_tb(e.__traceback__)],
                      "shown": "".join(traceback.format_exception(e))}))
"""


def _python310():
    """A Python 3.10 (`python3.10` on PATH, or pyenv's), or None."""
    home = os.path.expanduser("~")
    for candidate in [shutil.which("python3.10")] + sorted(glob.glob(f"{home}/.pyenv/versions/3.10*/bin/python3.10")):
        if candidate and subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 10)"],
                                        capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.mark.parametrize("which", ["this", "3.10"])
def test_a_failed_load_shows_the_callers_frame_and_the_line_on_every_python(which):
    """Python 3.10 re-raises with the traceback it caught, so there the
    decorator's own call line stays (one frame, no other of the tool's);
    from 3.11 on the caller's frame is the only one (issue 44, bug 4)."""
    python = sys.executable if which == "this" else _python310()
    if python is None:
        pytest.skip("no Python 3.10 here (python3.10 on PATH, or pyenv's): install one to check 3.10's re-raise")
    proc = subprocess.run([python, "-c", _FRAMES, REPO], capture_output=True, text=True, check=True)
    version = tuple(int(x) for x in subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                                                    capture_output=True, text=True).stdout.split())
    out = json.loads(proc.stdout)
    expected = [["<string>", "<module>"]] + ([["errors.py", "entry"]] if version < (3, 11) else [])
    assert out["frames"] == expected, out["shown"]
    assert "During handling" not in out["shown"] and "KeyError" not in out["shown"], out["shown"]
    assert out["shown"].rstrip().endswith("Failed: load(myops): build failed: nf.yaml:3: entry 'x': bad")


# What the docs name as each module's API (README.md, docs/load.md,
# docs/embedding.md, docs/shipping.md): exactly its __all__.
PUBLIC = {
    "autograd_scons": {"Error", "LoadError", "PatchNotInEffect", "TOOLPATH", "load", "load_inline", "patched_functions"},
    "autograd_scons.jit.loader": {"LoadError", "load", "load_inline"},
    "autograd_scons.build_meta": {"build_wheel", "build_sdist", "build_editable", "get_requires_for_build_wheel",
                                  "get_requires_for_build_sdist", "get_requires_for_build_editable",
                                  "prepare_metadata_for_build_wheel", "prepare_metadata_for_build_editable"},
    "autograd_scons.extension": {"Environment", "Package"},
    "autograd_scons.buildenv.torch_flags": {"configure"},
    "autograd_scons.buildenv.verified_cache": {"VerifiedCacheDir"},
}
# Modules whose every other function and class is a helper: named with an underscore.
HELPERS_PRIVATE = ("autograd_scons.jit.loader", "autograd_scons.build_meta", "autograd_scons.extension")
# The PEP 517 hooks are named by the standard, not by our docs.
_STANDARD = {n for n in PUBLIC["autograd_scons.build_meta"]}


def _docs_text():
    text = ""
    for page in [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))):
        with open(page, encoding="utf-8") as f:
            text += f.read()
    return text


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_each_modules_all_is_what_the_docs_name(name):
    import importlib
    import inspect
    module = importlib.import_module(name)
    assert set(module.__all__) == PUBLIC[name]
    assert all(getattr(module, n, None) is not None for n in module.__all__)
    undocumented = sorted(n for n in PUBLIC[name] - _STANDARD if not re.search(rf"\b{n}\b", _docs_text()))
    assert undocumented == [], f"{name}: public but named in no doc: {undocumented}"
    if name in HELPERS_PRIVATE:
        public_looking = sorted(n for n, v in vars(module).items()
                                if not n.startswith("_") and (inspect.isfunction(v) or inspect.isclass(v))
                                and getattr(v, "__module__", None) == name and n not in module.__all__)
        assert public_looking == [], f"{name}: helpers that look public (name them _...): {public_looking}"


def test_load_and_load_inline_share_one_frozen_set_of_keywords():
    import dataclasses
    import inspect
    from autograd_scons.jit.load_request import LoadOptions

    def keywords(fn):
        return [(p.name, p.default) for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY]
    documented = ["tags", "includes", "namespace", "python", "kernels", "unity", "extra_cflags", "extra_cuda_cflags",
                  "extra_ldflags", "extra_include_paths", "build_directory", "verbose", "cuda", "pch", "timeout",
                  "cache_dir", "stable", "python_helpers"]   # docs/load.md
    assert [k for k, _ in keywords(autograd_scons.load)] == documented
    assert keywords(autograd_scons.load) == keywords(autograd_scons.load_inline)
    assert dict(keywords(autograd_scons.load))["pch"] == "auto" and dict(keywords(autograd_scons.load))["python"] is True
    options = LoadOptions(pch=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.pch = False
    with pytest.raises(TypeError, match=r"load_inline\(\) got an unexpected keyword argument 'pchh'"):
        autograd_scons.load_inline("x", "", "", pchh=True)
