"""A CacheDir entry is used only if its bytes match the digest stored beside it.

A flipped byte in a cached object used to be retrieved and linked, and the
next `scons -q` said everything was up to date.  These runs use the stand-in
compiler (tests/support/fakecxx.sh): what matters is what SCons retrieves, rebuilds
and reports, not what the objects contain.
"""

import os
import shutil

import pytest

from support.scons_helpers import FAKE_CXX, REPO, clone, compiled, scons

TINY = "tests/fixtures/tiny_ext"
OBJ = os.path.join("build", "example", "gen", "functions", "ScaleBackward0.os")
ALL_OBJECTS = ["MulBackward0.os", "MulBackward1.os", "ScaleBackward0.os", "bindings_0.os", "cache_key.os",
               "module.os", "support.os"]


def args(cache):
    # One TU per Function (UNITY=0): the objects named here are the per-op ones.
    return ("-j2", f"CXX={FAKE_CXX}", f"EXAMPLE={TINY}", f"CACHEDIR={cache}", "UNITY=0")


def entries(cache):
    """Cache entry paths (not SCons's config files, not digests)."""
    return sorted(os.path.join(d, n) for d, _, names in os.walk(cache) for n in names
                  if os.path.dirname(os.path.join(d, n)) != str(cache) and not n.endswith(".sha256"))


def entry_of(cache, built_file):
    """The cache entry holding `built_file`'s bytes."""
    data = open(built_file, "rb").read()
    found = [e for e in entries(cache) if open(e, "rb").read() == data]
    assert len(found) == 1, found
    return found[0]


def warnings(proc):
    return [line for line in proc.stderr.splitlines() if "warning" in line]


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A built checkout and the CacheDir its build filled."""
    base = tmp_path_factory.mktemp("vcache")
    root = clone(base / "first")
    cache = base / "cache"
    out = scons(root, *args(cache)).stdout
    assert compiled(out) == ALL_OBJECTS
    return root, cache


@pytest.fixture
def cache(filled, tmp_path):
    """A private copy of the filled cache."""
    return shutil.copytree(filled[1], tmp_path / "cache")


def checkout(filled, dst):
    """Another checkout, in another folder (with the cached torch facts: see clone)."""
    return clone(dst)


def test_corrupt_entry_is_reported_evicted_and_rebuilt(filled, cache, tmp_path):
    first, _ = filled
    entry = entry_of(cache, os.path.join(first, OBJ))
    data = bytearray(open(entry, "rb").read())
    data[0] ^= 0x01  # one flipped bit
    open(entry, "wb").write(bytes(data))

    other = checkout(filled, tmp_path / "second")
    proc = scons(other, *args(cache))
    w = warnings(proc)
    assert len(w) == 1, proc.stderr
    assert w[0].startswith("scons: warning: cache entry ") and entry in w[0] and OBJ in w[0], w[0]
    assert "corrupt (digest mismatch); evicted, rebuilding" in w[0]
    assert compiled(proc.stdout) == ["ScaleBackward0.os"]
    assert open(os.path.join(other, OBJ), "rb").read() == open(os.path.join(first, OBJ), "rb").read()
    # The rebuilt object went back into the cache, verified: a third checkout
    # gets everything from it, silently.
    third = checkout(filled, tmp_path / "third")
    again = scons(third, *args(cache))
    assert compiled(again.stdout) == [] and warnings(again) == []
    assert again.stdout.count("from cache") == len(ALL_OBJECTS) + 1  # and the library


@pytest.mark.compile
def test_entry_without_digest_is_a_miss_not_a_crash(filled, cache, tmp_path):
    # As left by a plain CacheDir, or by a version of the tool before digests.
    for d, _, names in os.walk(cache):
        for n in names:
            if n.endswith(".sha256"):
                os.remove(os.path.join(d, n))
    other = checkout(filled, tmp_path / "second")
    proc = scons(other, *args(cache))
    assert compiled(proc.stdout) == ALL_OBJECTS
    w = warnings(proc)
    assert len(w) == 1 and "has no digest" in w[0] and "treated as misses" in w[0], proc.stderr
    assert "Traceback" not in proc.stderr
    # Rebuilt entries were stored again, with their digests.
    third = checkout(filled, tmp_path / "third")
    again = scons(third, *args(cache))
    assert compiled(again.stdout) == [] and warnings(again) == []


def test_read_only_cache_does_not_evict(filled, cache, tmp_path):
    first, _ = filled
    entry = entry_of(cache, os.path.join(first, OBJ))
    open(entry, "ab").write(b"x")
    other = checkout(filled, tmp_path / "second")
    proc = scons(other, "--cache-readonly", *args(cache))
    assert compiled(proc.stdout) == ["ScaleBackward0.os"]
    assert len(warnings(proc)) == 1 and "left in place, rebuilding" in warnings(proc)[0]
    assert os.path.exists(entry)


def test_dry_run_does_not_evict(filled, cache, tmp_path):
    first, _ = filled
    entry = entry_of(cache, os.path.join(first, OBJ))
    open(entry, "ab").write(b"x")
    # A copy of the built checkout without that object: -n would retrieve it.
    other = shutil.copytree(first, tmp_path / "second", symlinks=True)
    os.remove(os.path.join(other, OBJ))
    proc = scons(other, "-n", *args(cache))
    assert len(warnings(proc)) == 1 and "left in place, rebuilding" in warnings(proc)[0], proc.stderr
    assert os.path.exists(entry) and os.path.exists(entry + ".sha256")


# Logs, at each entry SCons's own CacheDir.push is about to store, whether
# its digest is already there.
DIGEST_FIRST = """
import os, SCons.CacheDir
_push = SCons.CacheDir.CacheDir.push
def push(self, node):
    _, entry = self.cachepath(node)
    if not os.path.lexists(entry):
        with open({log!r}, "a") as log:
            log.write(f"{{os.path.exists(entry + '.sha256')}} {{node}}\\n")
    return _push(self, node)
SCons.CacheDir.CacheDir.push = push
"""


def test_the_digest_is_written_before_the_entry(tmp_path):
    root, log = clone(tmp_path / "repo"), tmp_path / "pushes.log"
    scons(root, *args(tmp_path / "cache"), prelude=DIGEST_FIRST.format(log=str(log)))
    pushes = log.read_text().splitlines()
    assert len(pushes) == len(ALL_OBJECTS) + 1, pushes   # and the library
    assert all(p.startswith("True ") for p in pushes), pushes


SITE = os.path.join(REPO, "site_scons")
EMBEDDING = f"""
import os, sys
sys.path.insert(0, {SITE!r})
from autograd_scons.buildenv import verified_cache
DefaultEnvironment(tools=[])
env = Environment(tools=["gcc", "g++", "gnulink", "ar"], CXX=ARGUMENTS["CXX"],
                  ENV={{"PATH": os.environ.get("PATH", "")}})
env.SConsignFile("build/.sconsign")
env.Replace(LINK="$CXX")
env.CacheDir(ARGUMENTS["CACHE"], verified_cache.VerifiedCacheDir)
env.Tool("autograd_functions", toolpath=[{os.path.join(SITE, "autograd_scons", "site_tools")!r}])
Default(env.AutogradLibrary("build/ops", "build/gen", native_functions="spec/native_functions.yaml",
                            derivatives="spec/derivatives.yaml", namespace="lib::grad", kernels=False,
                            unity=0))
"""


def embedding_project(root):
    """A project of its own that uses the tool and VerifiedCacheDir."""
    os.makedirs(os.path.join(root, "spec"))
    for f in ("native_functions.yaml", "derivatives.yaml"):
        shutil.copy(os.path.join(REPO, TINY, f), os.path.join(root, "spec", f))
    with open(os.path.join(root, "SConstruct"), "w") as f:
        f.write(EMBEDDING)
    return str(root)


def test_verified_cache_dir_in_an_embedding_build(tmp_path):
    cache = tmp_path / "cache"
    run = ("-j2", f"CXX={FAKE_CXX}", f"CACHE={cache}")
    first = embedding_project(tmp_path / "first")
    assert compiled(scons(first, *run).stdout) == [o for o in ALL_OBJECTS if o != "module.os"]
    built = os.path.join(first, "build", "gen", "functions", "ScaleBackward0.os")
    entry = entry_of(cache, built)
    assert os.path.exists(entry + ".sha256")
    open(entry, "ab").write(b"x")
    second = embedding_project(tmp_path / "second")
    proc = scons(second, *run)
    w = warnings(proc)
    assert len(w) == 1 and entry in w[0] and "corrupt (digest mismatch); evicted, rebuilding" in w[0], proc.stderr
    assert compiled(proc.stdout) == ["ScaleBackward0.os"]
    with open(built, "rb") as a, open(os.path.join(second, "build", "gen", "functions", "ScaleBackward0.os"),
                                      "rb") as b:
        assert a.read() == b.read()
