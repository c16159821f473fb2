"""`env.AutogradLibrary`: the Functions linked into one library, a no-op that
does not even declare the per-op graph, and the precompiled prelude (pch=True).

A project of its own in a temporary folder, the tool loaded by toolpath,
tests/support/fakecxx.sh as the compiler: what is checked is what SCons and the tool
decide to build (tests/benchmarks/test_rebuild_counts.py and the CI quick mode compile
with the real g++ and the real precompiled header).
"""

import os
import re
import shutil

import pytest

from support.scons_helpers import FAKE_CXX, REPO, compiled, edit, report, scons
from support.spec_facts import example_ops

SITE = os.path.join(REPO, "site_scons")
TINY = os.path.join(REPO, "tests", "fixtures", "tiny_ext")
FUNCTIONS = example_ops(TINY).functions
N = len(FUNCTIONS)
# unity=0: one object per Function, the support TU, the Python bindings' one TU and the digest's
OBJECTS = sorted([f + ".os" for f in FUNCTIONS] + ["support.os", "bindings_0.os", "cache_key.os"])
SKIPPED = "per-op graph not declared"

SCONSTRUCT = f"""
import os
DefaultEnvironment(tools=[])
env = Environment(tools=["gcc", "g++", "gnulink", "ar"], CXX=ARGUMENTS["CXX"],
                  ENV={{"PATH": os.environ.get("PATH", "")}})
env.SConsignFile("build/.sconsign")
env.Replace(LINK="$CXX")
env.Append(CCFLAGS=ARGUMENTS.get("OPT", "-O2").split())
env["AUTOGRAD_PCH_KEY"] = ARGUMENTS.get("PCH_KEY", "torch 1")
env.Tool("autograd_functions", toolpath=[{os.path.join(SITE, "autograd_scons", "site_tools")!r}])
lib = env.AutogradLibrary("build/ops", "build/gen", native_functions="spec/native_functions.yaml",
                          derivatives="spec/derivatives.yaml", namespace="lib::grad", kernels=False,
                          unity=0, pch=ARGUMENTS.get("PCH") == "1")  # one TU per Function: objects by name
Default(lib)
"""


def make(root):
    os.makedirs(os.path.join(root, "spec"))
    for f in ("native_functions.yaml", "derivatives.yaml"):
        shutil.copy(os.path.join(TINY, f), os.path.join(root, "spec", f))
    with open(os.path.join(root, "SConstruct"), "w") as f:
        f.write(SCONSTRUCT)
    return str(root)


def run(root, *args, check=True):
    return scons(root, f"CXX={FAKE_CXX}", *args, check=check).stdout


def linked(out):
    return any(re.search(r"-o build/libops\.so ", line) for line in out.splitlines())


@pytest.fixture(scope="module", params=["0", "1"], ids=["plain", "pch"])
def built(request, tmp_path_factory):
    root = make(tmp_path_factory.mktemp("lib"))
    pch = f"PCH={request.param}"
    out = run(root, "-j2", pch)
    assert compiled(out) == OBJECTS and linked(out)
    assert os.path.exists(os.path.join(root, "build", "libops.so.autograd-stamp"))
    return root, pch


@pytest.fixture
def proj(built, tmp_path):
    root, pch = built
    return shutil.copytree(root, tmp_path / "p", symlinks=True), pch


def test_noop_does_not_declare_the_graph(proj):
    root, pch = proj
    out = run(root, pch)
    assert compiled(out) == [] and not linked(out)
    assert report(out) == [f"build/gen: {N} Functions: 0 regenerated, {N} unchanged, 0 removed; inputs unchanged "
                           f"(specs not parsed); compiled as {N} TUs, one per unit (unity=0), Python bindings in 1 TU; library up to date "
                           f"since its last build: {SKIPPED}",
                           "0 objects compiled in all (0 generated, 0 other)"]


def test_an_edit_declares_the_graph_then_the_noop_is_fast_again(proj):
    root, pch = proj
    edit(os.path.join(root, "spec", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    out = run(root, pch)
    assert compiled(out) == ["ScaleBackward0.os", "cache_key.os"] and linked(out)
    assert SKIPPED not in out
    out = run(root, pch)
    assert compiled(out) == [] and SKIPPED in out


# The stamp's inputs do not depend on the PCH (test_pch_key_change_... covers
# what does): the plain build only.
@pytest.mark.parametrize("built", ["0"], indirect=True, ids=["plain"])
@pytest.mark.parametrize("change", ["flags", "object deleted", "library deleted", "stamp damaged"])
def test_anything_changed_declares_the_graph(proj, change):
    root, pch = proj
    args = [pch]
    if change == "flags":
        args.append("OPT=-O1")
    elif change == "object deleted":
        os.unlink(os.path.join(root, "build", "gen", "functions", "MulBackward1.os"))
    elif change == "library deleted":
        os.unlink(os.path.join(root, "build", "libops.so"))
    else:
        stamp = os.path.join(root, "build", "libops.so.autograd-stamp")
        with open(stamp) as f:
            text = f.read()
        with open(stamp, "w") as f:
            f.write(text[: len(text) // 2])
    out = run(root, *args)
    assert SKIPPED not in out
    want = {"flags": OBJECTS, "object deleted": ["MulBackward1.os"]}.get(change, [])
    assert compiled(out) == want
    # a recompiled object with the same bytes does not relink
    assert linked(out) == (change in ("flags", "library deleted"))
    assert SKIPPED in run(root, *args)


@pytest.mark.parametrize("built", ["0"], indirect=True, ids=["plain"])
@pytest.mark.parametrize("target", [os.path.join("build", "gen", "functions", "MulBackward0.os"), "."])
def test_other_targets_see_the_graph(proj, target):
    root, pch = proj
    out = run(root, pch, target)
    assert SKIPPED not in out


def test_dry_run_and_clean_see_the_graph(proj):
    root, pch = proj
    assert SKIPPED not in run(root, pch, "-n")
    run(root, pch, "-c")
    assert not os.path.exists(os.path.join(root, "build", "libops.so"))
    assert not os.path.exists(os.path.join(root, "build", "libops.so.autograd-stamp"))
    assert not os.path.exists(os.path.join(root, "build", "gen"))


def test_generate_alias_generates_and_builds_nothing(tmp_path):
    root = make(tmp_path / "g")
    out = run(root, "generate")
    assert compiled(out) == [] and not linked(out)
    assert report(out)[0].startswith(f"build/gen: {N} Functions: {N} regenerated")
    assert os.path.exists(os.path.join(root, "build", "gen", "functions", "ScaleBackward0.cpp"))


def test_pch_is_built_first_and_force_included(tmp_path):
    root = make(tmp_path / "fresh")
    lines = run(root, "-j1", "PCH=1").splitlines()
    gch = [i for i, line in enumerate(lines) if "-x c++-header" in line]
    objs = [i for i, line in enumerate(lines) if re.search(r"\.os -c ", line)]
    assert len(gch) == 1 and objs and gch[0] < min(objs)
    assert "-o build/gen/prelude_pch.h.gch" in lines[gch[0]] and "-include" not in lines[gch[0]]
    for i in objs:   # all but the digest's TU, which includes nothing (codegen/emit/cache_key.py)
        takes = "-Winvalid-pch -include build/gen/prelude_pch.h" in lines[i]
        assert takes == ("cache_key.os" not in lines[i]), lines[i]
    with open(os.path.join(root, "build", "gen", "prelude_pch.h")) as f:
        assert '#include "prelude_impl.h"' in f.read()


@pytest.mark.parametrize("built", ["1"], indirect=True, ids=["pch"])
def test_pch_key_change_rebuilds_the_pch_and_every_object(proj):
    root, pch = proj
    out = run(root, pch, "PCH_KEY=torch 2")
    assert any("-x c++-header" in line for line in out.splitlines())
    assert compiled(out) == [o for o in OBJECTS if o != "cache_key.os"]   # (which does not take it)
    out = run(root, pch, "PCH_KEY=torch 2")
    assert compiled(out) == [] and SKIPPED in out


@pytest.mark.parametrize("built", ["1"], indirect=True, ids=["pch"])
def test_an_edit_does_not_rebuild_the_pch(proj):
    root, pch = proj
    assert pch == "PCH=1"
    edit(os.path.join(root, "spec", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 3")
    out = run(root, pch)
    assert compiled(out) == ["ScaleBackward0.os", "cache_key.os"]
    assert not any("-x c++-header" in line for line in out.splitlines())


def test_an_included_header_edit_rebuilds_past_the_stamp(tmp_path):
    """The stamp knows the specs and what was generated (the manifest); an
    `includes=` header is neither: it records every source and header the
    objects were compiled from, and a header edit declares the graph and
    recompiles what includes it (it once matched and kept the old library,
    exit 0).  The library's digest for torch.compile's caches changes too."""
    root = make(tmp_path)
    text = open(os.path.join(root, "SConstruct")).read()
    text = text.replace("unity=0,", 'unity=0, includes=["helpers.h"],').replace(
        'env.Replace(LINK="$CXX")', 'env.Replace(LINK="$CXX")\nenv.Append(CPPPATH=["inc"])')
    with open(os.path.join(root, "SConstruct"), "w") as f:
        f.write(text)
    os.makedirs(os.path.join(root, "inc"))
    header = os.path.join(root, "inc", "helpers.h")
    with open(header, "w") as f:
        f.write("// helpers, first version\n")
    run(root, "-j2")
    digest = os.path.join(root, "build", "gen", "cache_key.cpp")
    first = open(digest).read()
    assert SKIPPED in run(root)   # unchanged: the free no-op
    with open(header, "w") as f:
        f.write("// helpers, edited\n")
    out = run(root)
    assert SKIPPED not in out and set(FUNCTIONS) <= {o[:-3] for o in compiled(out)} and linked(out)
    assert open(digest).read() != first
