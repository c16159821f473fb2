"""The precompiled prelude's rules, as counts (tool/pch_compilers.py, tool/pch.py):
which TUs take it under GCC and under clang, the clang precompile's
`-fpch-instantiate-templates`, and one shared prelude per torch, compiler
and flags: a second extension (another checkout, another spec folder) takes
the first one's, a flag change makes another.

`scons` of this checkout with tests/support/fakecxx.sh as the compiler,
named `g++` or `clang++` (the family is read off the name).
"""

import os
import subprocess
import sys
import re

import pytest

from support.scons_helpers import clone, compiled, named_standin, scons

TINY = os.path.join("tests", "fixtures", "tiny_ext")


def fake(tmp_path, name):
    """The stand-in compiler under `name`."""
    return named_standin(str(tmp_path / "bin"), name)


def precompiles(out):
    return [line for line in out.splitlines() if " -x c++-header " in line]


def objects(out):
    return [line for line in out.splitlines() if re.search(r"-o \S+\.os -c ", line)]


def taking(out, family):
    """The compiled objects whose command takes the shared precompiled prelude."""
    flag = r"-include-pch \S+/torch_prelude\.h\.pch" if family == "clang" else \
        r"-Winvalid-pch -include \S+/torch_prelude\.h "
    return sorted(os.path.basename(re.search(r"-o (\S+)", x).group(1)) for x in objects(out) if re.search(flag, x))


def build(root, cxx, prelude_dir, *args, pch="PCH=1"):
    """`scons` on the example; PCH=1 unless said otherwise: these tests are
    about where the prelude is kept, not about which TUs take it."""
    return scons(root, "-j2", f"CXX={cxx}", f"PRELUDE_DIR={prelude_dir}", "UNITY=2", pch, *args).stdout


def keys(prelude_dir):
    return sorted(os.listdir(prelude_dir)) if os.path.isdir(prelude_dir) else []


@pytest.mark.parametrize("family", ["gcc", pytest.param("clang", marks=pytest.mark.compile)])
def test_every_tu_of_the_example_takes_the_prelude_under_either_compiler(tmp_path, family):
    # PCH=auto (codegen/engine/functions_request.py): the example's 4 cold TUs pay for clang's
    # precompile (from 2), not for GCC's (from 5); PCH=1 gives it to every TU
    # but the digest's, which includes nothing (codegen/emit/cache_key.py).
    cxx = fake(tmp_path, "clang++" if family == "clang" else "g++")
    root, shared = clone(tmp_path / "repo"), str(tmp_path / "prelude")
    auto = build(root, cxx, shared, pch="PCH=auto")
    every = sorted(os.path.basename(o) for o in compiled(auto) if o != "cache_key.os")
    assert len(compiled(auto)) == 5 and "cache_key.os" in compiled(auto)
    assert len(every) == 4 and taking(auto, family) == (every if family == "clang" else [])
    out = build(root, cxx, shared)   # PCH=1: under clang the same command lines, nothing to redo
    assert taking(out, family) == ([] if family == "clang" else every)   # 2 buckets, the bindings, kernels.cpp
    [pre] = precompiles(auto if family == "clang" else out)
    # clang keeps the prelude's instantiations; GCC has no such flag.
    assert ("-fpch-instantiate-templates" in pre.split()) == (family == "clang")
    assert len(keys(shared)) == 1
    suffix = ".pch" if family == "clang" else ".gch"
    assert os.path.isfile(os.path.join(shared, keys(shared)[0], "torch_prelude.h" + suffix))


def test_two_libraries_of_one_sconscript_take_one_shared_prelude(tmp_path):
    # Two AutogradFunctions calls in their own env.Clone(), pch on: the shared
    # prelude is one target of the build, declared once (each declaration
    # was its own action, and SCons refused the second: "Two environments
    # with different actions were specified for the same target").
    from support import twin_extensions   # (its SConscript: pch=env["AUTOGRAD_PCH"], PCH=1 here)
    src = twin_extensions.write(str(tmp_path / "twins"), "aa", 2)
    root, shared = clone(tmp_path / "repo"), str(tmp_path / "prelude")
    out = build(root, fake(tmp_path, "g++"), shared, f"EXAMPLE={src}")
    assert len(precompiles(out)) == 1 and len(keys(shared)) == 1
    assert taking(out, "gcc") == ["bindings_0.os", "bindings_0.os", "bucket_0.os", "bucket_0.os"]


def test_the_precompile_has_no_extension_specific_flag_or_line(tmp_path):
    root, shared = clone(tmp_path / "repo"), str(tmp_path / "prelude")
    [pre] = precompiles(build(root, fake(tmp_path, "g++"), shared))
    assert not any(w.startswith("-I") for w in pre.split()) and "TORCH_EXTENSION_NAME" not in pre
    with open(os.path.join(shared, keys(shared)[0], "torch_prelude.h")) as f:
        text = f.read()
    assert "myops" not in text and "namespace" not in text and "#include <ATen/ATen.h>" in text


@pytest.mark.compile
def test_two_extensions_share_one_prelude_and_a_flag_change_makes_another(tmp_path):
    cxx, shared = fake(tmp_path, "g++"), str(tmp_path / "prelude")
    first, second = clone(tmp_path / "one"), clone(tmp_path / "two")
    assert len(precompiles(build(first, cxx, shared))) == 1
    # Another checkout of the example, and another extension (the tiny one, pch forced on).
    out = build(second, cxx, shared)
    assert precompiles(out) == [] and len(taking(out, "gcc")) == 4
    tiny = build(second, cxx, shared, f"EXAMPLE={TINY}", "PCH=1", "BUILD=build-tiny")
    assert precompiles(tiny) == [] and taking(tiny, "gcc") and len(keys(shared)) == 1
    # The same flags again in the first checkout: nothing to do.
    assert compiled(build(first, cxx, shared)) == []
    changed = build(first, cxx, shared, "OPT=-O1")
    assert len(precompiles(changed)) == 1 and len(keys(shared)) == 2
    assert len(taking(changed, "gcc")) == 4


@pytest.mark.compile
def test_clean_keeps_the_shared_prelude(tmp_path):
    cxx, shared = fake(tmp_path, "g++"), str(tmp_path / "prelude")
    root = clone(tmp_path / "repo")
    build(root, cxx, shared)
    scons(root, "-c", f"CXX={cxx}", f"PRELUDE_DIR={shared}", "UNITY=2")
    assert len(keys(shared)) == 1 and len(os.listdir(os.path.join(shared, keys(shared)[0]))) >= 2
    assert precompiles(build(root, cxx, shared)) == []


@pytest.mark.parametrize("family", [pytest.param("gcc", marks=pytest.mark.compile), "clang"])
@pytest.mark.compile
def test_load_takes_the_prelude_in_a_cold_build_under_clang_only(tmp_path, family):
    # load()'s pch="auto" (codegen/engine/buckets.py, prelude_pays): GCC's precompile
    # pays from 5 TUs, clang's from 2; the example has 3.  The edit TU takes
    # it under either.
    from support.load_helpers import environ, example, run
    call = dict(example(tmp_path / "specs"), build_directory=str(tmp_path / "build"), verbose=True)
    env = environ(fake(tmp_path, "clang++" if family == "clang" else "g++"),
                  AUTOGRAD_EXTENSIONS_DIR=str(tmp_path / "ext"))
    cold = run(call, env).stdout
    assert len(compiled(cold)) == 4   # and the digest's TU, which never takes it
    assert len(taking(cold, family)) == (3 if family == "clang" else 0)
    assert len(precompiles(cold)) == (family == "clang")
    with open(call["derivatives"]) as f:
        text = f.read()
    with open(call["derivatives"], "w") as f:
        f.write(text.replace("self: grad * alpha", "self: alpha * grad", 1))
    first = run(call, env).stdout
    assert taking(first, family) == ["edited_0.os"] and compiled(first) == ["cache_key.os", "edited_0.os"]
    assert len(precompiles(first)) == (family == "gcc")


def test_a_prelude_folder_others_can_write_is_refused_in_one_line(tmp_path):
    shared = tmp_path / "prelude"
    shared.mkdir()
    shared.chmod(0o777)
    proc = scons(clone(tmp_path / "repo"), "-j2", f"CXX={fake(tmp_path, 'g++')}", f"PRELUDE_DIR={shared}", "PCH=1",
                 check=False)
    [line] = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert line.startswith(f"scons: *** precompiled prelude: {shared} is writable by its group or by others")


@pytest.mark.compile
def test_a_damaged_header_or_a_killed_precompile_is_rebuilt(tmp_path):
    cxx, shared = fake(tmp_path, "g++"), str(tmp_path / "prelude")
    first, second = clone(tmp_path / "one"), clone(tmp_path / "two")
    build(first, cxx, shared)
    [key] = keys(shared)
    folder = os.path.join(shared, key)
    with open(os.path.join(folder, "torch_prelude.h"), "a") as f:
        f.write("#include <planted.h>\n")
    open(os.path.join(folder, "torch_prelude.h.gch.tmp999"), "w").close()
    out = build(second, cxx, shared)
    assert len(precompiles(out)) == 1
    assert sorted(n for n in os.listdir(folder) if not n.startswith(".")) == ["torch_prelude.h", "torch_prelude.h.gch"]
    with open(os.path.join(folder, "torch_prelude.h")) as f:
        assert "planted" not in f.read()


SCONS_MAIN = "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())"


@pytest.mark.compile
def test_a_home_that_cannot_be_written_keeps_the_prelude_in_the_build_folder(tmp_path):
    # A build container's read-only (or absent) home: the shared folder's
    # default cannot be made, so the build keeps its own prelude and says
    # so in one line; it does not fail.  (As root, only a read-only mount
    # makes a folder unwritable.)
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m (a private mount namespace) is not allowed here: no read-only home can be made")
    home = tmp_path / "home"
    home.mkdir()
    root = clone(tmp_path / "repo")
    env = {k: v for k, v in os.environ.items() if k not in ("AUTOGRAD_EXTENSIONS_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
           f'mount --bind {home} {home} && mount -o remount,ro,bind {home} && exec "$@"', "sh",
           sys.executable, "-c", SCONS_MAIN, "-j2", f"CXX={fake(tmp_path, 'g++')}", "PCH=1"]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    shared = home / ".cache" / "autograd_extensions" / "_prelude"
    assert [x for x in proc.stderr.splitlines() if x.strip()] == [
        f"scons: warning: cannot make {shared}: the precompiled prelude is kept in the build folder "
        "(PRELUDE_DIR= shares it)"]
    [pre] = precompiles(proc.stdout)
    assert f"-o {os.path.join('build', 'example', 'gen')}" in pre and not os.listdir(home)
