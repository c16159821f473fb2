"""Upgrades keep old builds working (issue 60): every form of loading the
tool or its helpers that an earlier README or doc showed still builds, with
one DeprecationWarning per old form naming the new one.  Each host
SConstruct below is the docs' own lines of the time (the commit named),
pointed at this checkout; each builds a one-op extension with the stand-in
compiler in a fresh interpreter (the old forms found the package through
the checkout, not an install).

The forms `from autograd_scons import torch_flags, verified_cache` (the
package's old top-level names) are tests/package/test_moved_names.py's.  No
builder keyword was ever removed or renamed (AutogradFunctions' keywords of
8db457e, the oldest, are all still options), so no form fails yet; a form
that is removed must fail in one line naming its replacement (the last test
holds the rule for unknown keywords)."""

import os
import subprocess
import sys
import textwrap

import pytest

from support.scons_helpers import FAKE_CXX, REPO, compiled, extensions_dir

NATIVE = """\
- func: host::scale(Tensor self, float alpha) -> Tensor
  variants: function
"""

DERIVATIVES = """\
- name: scale(Tensor self, float alpha) -> Tensor
  self: grad * alpha
"""

NEW_TOOL = 'import autograd_scons; env.Tool("{}", toolpath=[autograd_scons.TOOLPATH])'

# README of 8db457e (2026-11-29): the tool from a checkout by toolpath, nothing installed
README_8DB457E = """\
env = Environment(tools=["default"], CXX={cxx!r}, SHCXX={cxx!r}, LINK={cxx!r}, SHLINK={cxx!r})
env.Tool("autograd_functions", toolpath=["{agf}/site_scons/site_tools"])
# ... torch's include paths, libraries and defines on env (see site_scons/torch_flags.py) ...
functions = env.AutogradFunctions(
    "gen",                                      # output folder (in the build tree)
    native_functions="spec/native_functions.yaml",
    derivatives="spec/derivatives.yaml",
    tags=None,                                  # optional tags.yaml
    namespace="myproject::autograd",            # C++ namespace of the classes
    unity=0,                                    # N > 0: return N unity TUs instead
    includes=["my_backward_helpers.h"],         # headers the formulas' helpers live in
)
env.SharedLibrary("myext", functions + ["my_code.cpp"])
"""

# docs/embedding.md of c068779 (2026-12-01), "From a checkout instead (no install)"
EMBEDDING_C068779 = """\
import sys
AGF = "{agf}"
sys.path.insert(0, AGF + "/site_scons")
import torch_flags, verified_cache
env = Environment(tools=["default"], CXX={cxx!r}, SHCXX={cxx!r}, LINK={cxx!r}, SHLINK={cxx!r})
torch_flags.configure(env, "build/.torch.json")
env.Tool("autograd_functions", toolpath=[AGF + "/site_scons/site_tools"])
functions = env.AutogradFunctions("gen", native_functions="spec/native_functions.yaml",
                                  derivatives="spec/derivatives.yaml", tags=None, namespace=None, unity=0,
                                  includes=["my_backward_helpers.h"], python=True)
env.SharedLibrary("myext", functions + ["my_code.cpp"])
env.CacheDir("cache", verified_cache.VerifiedCacheDir)
"""

# README of 67e0fd5 (2026-12-01): the nvcc tool from a checkout, then cuda_flags
NVCC_67E0FD5 = """\
import sys
AGF = "{agf}"
sys.path.insert(0, AGF + "/site_scons")
import torch_flags, cuda_flags
env = Environment(tools=["default"], CXX={cxx!r}, SHCXX={cxx!r}, LINK={cxx!r}, SHLINK={cxx!r})
env.Tool("nvcc", toolpath=[AGF + "/site_scons/site_tools"])
cuda_flags.configure(env, torch_flags.configure(env, "build/.torch.json"), mode="0")
env.Tool("autograd_functions", toolpath=[AGF + "/site_scons/site_tools"])
functions = env.AutogradFunctions("gen", native_functions="spec/native_functions.yaml",
                                  derivatives="spec/derivatives.yaml", unity=0, python=False)
env.SharedLibrary("myext", functions + ["my_code.cpp"])
"""


def _tool_warning(tool):
    return (f"DeprecationWarning: the tool {tool!r} from a checkout's site_scons/site_tools moved into the "
            f"package: `{NEW_TOOL.format(tool)}` (the old folder will be removed)")


def _module_warning(old):
    return (f"DeprecationWarning: the top-level module {old!r} of a checkout's site_scons/ moved into the "
            f"package: `from autograd_scons.buildenv import {old}` (the old name will be removed)")


# form -> (SConstruct, {its line that uses an old form: the warning it gives})
FORMS = {
    "toolpath_8db457e": (README_8DB457E, {2: _tool_warning("autograd_functions")}),
    "checkout_c068779": (EMBEDDING_C068779, {4: _module_warning("torch_flags") + "|" + _module_warning(
        "verified_cache"), 7: _tool_warning("autograd_functions")}),
    "nvcc_67e0fd5": (NVCC_67E0FD5, {4: _module_warning("torch_flags") + "|" + _module_warning("cuda_flags"),
                                    6: _tool_warning("nvcc"), 8: _tool_warning("autograd_functions")}),
}


@pytest.fixture(scope="module")
def torch_facts(tmp_path_factory):
    """torch's facts, asked of torch once (torch_flags.configure reads them
    from the build folder instead of a 2 s `import torch`)."""
    from autograd_scons.buildenv import torch_flags
    path = tmp_path_factory.mktemp("facts") / "torch.json"
    torch_flags.torch_facts(str(path))
    return path.read_text()


def _host(tmp_path, sconstruct, facts):
    shown = "\nimport autograd_scons; print('package:', autograd_scons.__file__)\n"   # (after the docs' lines)
    files = {"SConstruct": sconstruct.format(agf=REPO, cxx=FAKE_CXX) + shown, "spec/native_functions.yaml": NATIVE,
             "spec/derivatives.yaml": DERIVATIVES, "my_code.cpp": "int host_code() { return 1; }\n",
             "my_backward_helpers.h": "#pragma once\n", "build/.torch.json": facts}
    for rel, text in files.items():
        os.makedirs(tmp_path / os.path.dirname(rel), exist_ok=True)
        (tmp_path / rel).write_text(text)


def _scons_fresh(cwd):
    """SCons in a fresh interpreter that shows every DeprecationWarning (as
    `python -W default::DeprecationWarning -m SCons` would)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOGRAD_") and k != "PYTHONPATH"}
    env["AUTOGRAD_EXTENSIONS_DIR"] = extensions_dir()
    code = "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())"
    return subprocess.run([sys.executable, "-W", "default::DeprecationWarning", "-c", code, "-Q"], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)


def _check_form(tmp_path, form, facts):
    sconstruct, expected = FORMS[form]
    _host(tmp_path, sconstruct, facts)
    proc = _scons_fresh(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert os.path.exists(tmp_path / "libmyext.so")
    assert "my_code.os" in compiled(proc.stdout) and "bucket_0.os" not in compiled(proc.stdout)   # unity=0
    assert os.path.exists(tmp_path / "gen" / "functions" / "ScaleBackward0.cpp")
    # this checkout's package did the build, not an installed copy (the editable install's)
    assert f"package: {REPO}/site_scons/autograd_scons/__init__.py" in proc.stdout
    warned = [line for line in proc.stderr.splitlines() if "DeprecationWarning" in line]
    wanted = [f"{tmp_path / 'SConstruct'}:{line}: {w}" for line, ws in sorted(expected.items())
              for w in ws.split("|")]
    assert warned == wanted, proc.stderr[-3000:]


def test_the_old_toolpath_into_a_checkout_builds_with_one_warning(tmp_path, torch_facts):
    """The issue's case: `env.Tool("autograd_functions", toolpath=[<checkout>/site_scons/site_tools])`
    failed with "No tool module 'autograd_functions' found" on main."""
    _check_form(tmp_path, "toolpath_8db457e", torch_facts)


@pytest.mark.parametrize("form", ["checkout_c068779", "nvcc_67e0fd5"])
def test_each_old_form_builds_with_one_warning_per_old_name(tmp_path, torch_facts, form):
    _check_form(tmp_path, form, torch_facts)


def test_an_unknown_builder_keyword_fails_in_one_line_naming_the_options(tmp_path, torch_facts):
    _host(tmp_path, README_8DB457E.replace("unity=0,", "bucket_count=0,"), torch_facts)
    proc = _scons_fresh(tmp_path)
    assert proc.returncode == 2
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("scons: ***")]
    assert line.startswith("scons: *** AutogradFunctions('gen'): unknown option 'bucket_count' (the options: "), line
    assert textwrap.shorten(line, 400).endswith(")")
