"""Another SCons project uses the tool: loaded by `toolpath` from this repo,
inside a sub-SConscript read with a (duplicating) `variant_dir`, building its
own C++ library from its own code plus the generated Functions; then
incrementally, one formula edit recompiling one object."""

import os
import shutil
import subprocess
import textwrap

import pytest

from autograd_scons.codegen.engine.buckets import slot_of

from support.scons_helpers import REPO, compiled, edit, linked, report, scons

pytestmark = pytest.mark.compile  # the host project builds with g++

SITE = os.path.join(REPO, "site_scons")

SCONSTRUCT = f"""
import sys
sys.path.insert(0, {SITE!r})  # only for torch's flags; the tool comes by toolpath
from autograd_scons.buildenv import torch_flags

env = Environment(tools=["gcc", "g++", "gnulink", "ar"])
env.SConsignFile("build/.sconsign")
torch_flags.configure(env, "build/.torch.json")
lib = SConscript("ext/SConscript", variant_dir="build/ext", exports="env")  # duplicate=1
Default(lib)
"""

# The library is linked through the host's own environment, which never
# loaded the tool: whatever the tool needs at link (an edited unit overriding
# its old text) must come with the nodes it returns.
SCONSCRIPT = f"""
Import("env")
host_env = env
env = env.Clone()
env.Tool("autograd_functions", toolpath=[{os.path.join(SITE, 'autograd_scons', 'site_tools')!r}])
functions = env.AutogradFunctions("gen", native_functions="spec/native_functions.yaml",
                                  derivatives="spec/derivatives.yaml", namespace="host::grad")
lib = host_env.SharedLibrary("hostops", functions + env.SharedObject("own.cpp"))
Return("lib")
"""

NATIVE = """
- func: host::scale(Tensor self, float alpha) -> Tensor
  variants: function
"""

DERIVATIVES = """
- name: scale(Tensor self, float alpha) -> Tensor
  self: grad * alpha
"""

OWN = """
// The host's own code, using a generated Function through its header.
#include "functions/ScaleBackward0.h"

#include <memory>
#include <string>

std::string host_function_name() { return std::make_shared<host::grad::ScaleBackward0>()->name(); }
"""


@pytest.fixture(scope="module")
def built_host(tmp_path_factory):
    """(the host project, the output of its cold build): never edited, so
    that each test sets up the state it asserts on, in any order."""
    root = tmp_path_factory.mktemp("host")
    files = {"SConstruct": SCONSTRUCT, "ext/SConscript": SCONSCRIPT, "ext/own.cpp": OWN,
             "ext/spec/native_functions.yaml": NATIVE, "ext/spec/derivatives.yaml": DERIVATIVES}
    for rel, text in files.items():
        os.makedirs(root / os.path.dirname(rel), exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    return str(root), scons(str(root), "-j2").stdout


@pytest.fixture
def host(built_host, tmp_path):
    """A private copy of the built host project (mtimes kept: up to date)."""
    return str(shutil.copytree(built_host[0], tmp_path / "host", symlinks=True))


def test_host_project_builds_its_library_with_the_generated_functions(built_host):
    host, out = built_host
    # host::scale is the host's own op: it also gets its registration + Autograd kernel.
    # The Function and the op kernel compile in one bucket (2 units), the
    # Function's Python bindings in a binding TU, the digest of the generated
    # code in its own (codegen/emit/cache_key.py).
    assert compiled(out) == ["bindings_0.os", "bucket_0.os", "cache_key.os", "own.os"]
    assert report(out)[0].startswith("build/ext/gen: 1 Functions + 1 op kernels: 2 regenerated")
    gen = os.path.join(host, "build", "ext", "gen")
    assert sorted(os.listdir(os.path.join(gen, "functions"))) == ["ScaleBackward0.cpp", "ScaleBackward0.h"]
    # the op's TU, and its header declaring its caller (codegen/emit/op_kernels/callers.py)
    assert sorted(os.listdir(os.path.join(gen, "ops"))) == ["host_scale.cpp", "host_scale.h"]
    assert sorted(os.listdir(os.path.join(gen, "unity"))) == ["bucket_0.cpp", "bucket_0.os"]
    assert sorted(os.listdir(os.path.join(gen, "python"))) == ["bindings.h", "bindings_0.cpp", "bindings_0.os"]
    assert not os.path.exists(os.path.join(host, "ext", "gen"))  # nothing in the source tree
    symbols = subprocess.run(["nm", "-DC", "--defined-only", os.path.join(host, "build", "ext", "libhostops.so")],
                             capture_output=True, text=True).stdout
    assert "host::grad::ScaleBackward0::apply(" in symbols and "host_function_name" in symbols


def test_host_project_no_op_then_one_edit_recompiles_one_object(host):
    out = scons(host, "-j2").stdout
    assert compiled(out) == [] and "is up to date" in out
    # The duplicating variant dir must not have deleted our generated files.
    assert "0 regenerated, 2 unchanged, 0 removed; inputs unchanged" in report(out)[0]
    edit(os.path.join(host, "ext", "spec", "derivatives.yaml"), "grad * alpha", "alpha * grad")
    out = scons(host, "-j2").stdout
    # First edit: the Function's edit TU only (its header is unchanged: its
    # old text in the bucket is overridden at link); own.os only includes
    # the unchanged header.
    edit_tu = f"edited_{slot_of('ScaleBackward0', 2)}.os"   # -j2: two edit TUs
    assert compiled(out) == sorted(["cache_key.os", edit_tu])   # (and the digest's TU)
    # The bucket is linked as its weakened copy (site_scons/autograd_scons/tool/weaken.py), through
    # the host's environment, without any flag of the tool's.
    assert linked(out, "libhostops.so") == sorted([edit_tu, "bindings_0.os", "bucket_0.weak.os", "cache_key.os",
                                                   "own.os"])
    assert "allow-multiple-definition" not in out
