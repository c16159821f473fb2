"""load() never loads a library that its own sources did not produce
(issue 34), with the stand-in compiler: each process reads, in the memory
of the library it loaded, the fingerprints of the sources that made it
(support/fingerprints.py).  Covered: one database per build folder (two
folders, two extensions, at once), a build killed after the edited object
was compiled then the edit undone (SIGKILL and SIGINT), a swapped library,
the cache folder's owner, mode and links, a read-only install of the tool,
and one line for each broken input.  tests/jit/test_load_fingerprint.py
runs the first scenario with the real compiler."""

import glob
import os
import signal
import stat
import subprocess
import sys

import pytest

from support.fingerprints import THEN_FAKE, environ, fp_call, loaded_value, run, start
from support.load_helpers import command, stall, wait_for
from support.spec_facts import REPO


def loads(call, check=True, env=None, **kw):
    """The value the fresh process's library computes (or the error line)."""
    proc = run(call, env or environ(), then=THEN_FAKE, check=check, **kw)
    if proc.returncode != 0:
        return [line for line in proc.stdout.splitlines() if line.startswith("ERROR")][-1:] or proc.stderr
    return loaded_value(proc.stdout)


@pytest.mark.compile
def test_each_build_folder_keeps_its_own_database(tmp_path):
    """The issue's reproduction: gb computes 1, ga 5, then gb 5."""
    ga, gb = tmp_path / "ga", tmp_path / "gb"
    assert loads(fp_call("m2", gb, 1)) == "1"
    assert loads(fp_call("m2", ga, 5)) == "5"
    assert loads(fp_call("m2", gb, 5)) == "5"
    assert loads(fp_call("m2", gb, 5)) == "5"      # and the stamp agrees
    assert glob.glob(os.path.join(ga, ".sconsign*.dblite")) and glob.glob(os.path.join(gb, ".sconsign*.dblite"))
    assert not glob.glob(os.path.join(REPO, "site_scons", ".sconsign*"))


@pytest.mark.compile
def test_two_extensions_and_two_folders_at_once(tmp_path):
    calls = [fp_call("m1", tmp_path / "a", 11), fp_call("m2", tmp_path / "b", 22),
             fp_call("m1", tmp_path / "c", 33), fp_call("m2", tmp_path / "d", 44)]
    for round_ in range(2):
        procs = [start(c, environ(), then=THEN_FAKE) for c in calls]
        outs = [p.communicate(timeout=600) for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, [o[1][-2000:] for o in outs]
        values = [loaded_value(o[0]) for o in outs]
        want = [c["cpp_sources"].split("v", 1)[1].split(")")[0] for c in calls]
        assert values == want, (round_, values, want)
        calls = [dict(c, cpp_sources=c["cpp_sources"].replace("v", "v9", 1)
                      .replace("self, ", "self, 9", 1)) for c in calls]


@pytest.mark.parametrize("sig", [signal.SIGKILL, pytest.param(signal.SIGINT, marks=pytest.mark.compile)])
@pytest.mark.compile
def test_a_build_killed_after_the_edit_compiled_then_undone_loads_the_undone_source(tmp_path, sig):
    folder = tmp_path / "build"
    assert loads(fp_call("m3", folder, 1)) == "1"
    marker = stall(str(folder), "link")
    builder = start(fp_call("m3", folder, 2), environ(), then=THEN_FAKE)
    wait_for(marker, builder)            # the edited object is compiled; the link stalls
    os.kill(builder.pid, sig)
    builder.communicate(timeout=120)
    os.unlink(os.path.join(folder, ".fakecxx_stall"))
    assert loads(fp_call("m3", folder, 1)) == "1"    # the edit undone
    assert loads(fp_call("m3", folder, 2)) == "2"    # and redone


def test_a_swapped_library_is_never_loaded(tmp_path):
    folder, other = tmp_path / "build", tmp_path / "other"
    assert loads(fp_call("m4", folder, 1)) == "1"
    assert loads(fp_call("m4", other, 7)) == "7"
    mine, theirs = os.path.join(folder, "m4.so"), os.path.join(other, "m4.so")
    st = os.stat(mine)
    for target in (mine, os.path.join(folder, "obj", "m4.so")):
        with open(theirs, "rb") as src, open(target, "r+b") as dst:   # same inode, then the old mtime back
            dst.truncate(0)
            dst.write(src.read())
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert loads(fp_call("m4", folder, 1)) == "1"


# --- the cache folder: ours, or refused ---------------------------------------

def _as_root():
    if os.geteuid() != 0:
        pytest.skip("needs root to play another user (chown, setpriv to nobody): run the suite as root, "
                    "as CI does")


def _error(call, env=None):
    line = loads(call, check=False, env=env)
    assert isinstance(line, list) and len(line) == 1, line
    return line[0]


def test_a_folder_of_another_user_or_writable_by_others_is_refused(tmp_path):
    _as_root()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    os.chmod(theirs, 0o777)
    line = _error(fp_call("m5", theirs, 1))
    assert line == (f"ERROR FolderError: load(m5): {theirs} is owned by uid 65534, not by you (uid 0): refusing "
                    "to build or load there (another user could put a library there: choose another build "
                    "folder (build_directory=, or $AUTOGRAD_EXTENSIONS_DIR))")
    assert os.listdir(theirs) == []
    ours = tmp_path / "ours"
    ours.mkdir()
    os.chmod(ours, 0o777)
    assert _error(fp_call("m5", ours, 1)).endswith(f"{ours} is writable by its group or by others (mode 777): "
                                                   f"refusing to build or load there (chmod go-w {ours})")
    # The cache's root made by another user beforehand: refused too, with what is below it.
    root = tmp_path / "root"
    root.mkdir()
    os.chown(root, 65534, 65534)
    call = fp_call("m5", None, 1)
    del call["build_directory"]
    assert "is owned by uid 65534" in _error(call, env=environ(AUTOGRAD_EXTENSIONS_DIR=str(root)))


# the fast tier plants the library and a folder; the log and the lock, opened
# the same way as the library, are the full tier's (tests/conftest.py)
@pytest.mark.parametrize("planted", [pytest.param("build.log", marks=pytest.mark.compile),
                                     pytest.param(".folder_lock", marks=pytest.mark.compile),
                                     pytest.param("m6.so", marks=pytest.mark.compile), "obj"])
def test_a_planted_link_is_never_followed(tmp_path, planted):
    folder = tmp_path / "build"
    assert loads(fp_call("m6", folder, 1)) == "1"
    target = tmp_path / "elsewhere"
    target.write_bytes(b"not yours to write\n")
    victim = folder / planted
    if victim.is_dir():
        import shutil
        shutil.rmtree(victim)
    else:
        victim.unlink()
    victim.symlink_to(target)
    assert _error(fp_call("m6", folder, 2)).endswith(f"{victim} is a symbolic link: refusing to build or load "
                                                      "there (remove it)")
    assert target.read_bytes() == b"not yours to write\n"


@pytest.mark.compile
def test_umask_000_still_makes_private_folders_and_files(tmp_path):
    root = tmp_path / "cache"
    call = fp_call("m7", None, 1)
    del call["build_directory"]
    env = environ(AUTOGRAD_EXTENSIONS_DIR=str(root))
    proc = subprocess.run(command(call, THEN_FAKE), env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.umask(0))
    assert proc.returncode == 0 and loaded_value(proc.stdout) == "1", proc.stderr[-2000:]
    modes = {}
    for parent, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(parent, name)
            modes[os.path.relpath(path, root)] = stat.S_IMODE(os.lstat(path).st_mode)
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    wide = {path: f"{mode:o}" for path, mode in modes.items() if mode & 0o077}
    assert modes and wide == {}


@pytest.mark.compile
def test_another_user_cannot_write_the_cache(tmp_path):
    _as_root()
    import tempfile
    shared = tempfile.mkdtemp(dir="/tmp")   # reachable by nobody, unlike pytest's folder
    try:
        os.chmod(shared, 0o711)
        folder = os.path.join(shared, "build")
        assert loads(fp_call("m8", folder, 1)) == "1"
        other = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                                "sh", "-c", f"echo evil > {folder}/m8.so || echo evil > {folder}/x"],
                               capture_output=True, text=True)
        assert other.returncode != 0 and "Permission denied" in other.stderr
        assert loads(fp_call("m8", folder, 1)) == "1"
    finally:
        import shutil
        shutil.rmtree(shared)


@pytest.mark.compile
def test_a_read_only_install_builds_and_loads(tmp_path):
    _as_root()
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m (a private mount namespace) is not allowed here: the read-only bind mount "
                    "of the tool cannot be made")
    call = fp_call("m9", tmp_path / "build", 3)
    script = f"mount --bind -o ro {os.path.join(REPO, 'site_scons')} {os.path.join(REPO, 'site_scons')}"
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", script + ' && exec "$@"', "sh"] + \
        command(call, THEN_FAKE)
    before = sorted(glob.glob(os.path.join(REPO, "site_scons", ".*")))
    proc = subprocess.run(cmd, env=environ(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert loaded_value(proc.stdout) == "3"
    assert sorted(glob.glob(os.path.join(REPO, "site_scons", ".*"))) == before


# --- one line for each broken input -------------------------------------------

def test_a_name_too_long_is_refused_before_building(tmp_path):
    call = fp_call("m" * 250, tmp_path / "build", 1)
    assert _error(call) == (f"ERROR LoadError: load({'m' * 20}...): the name has 250 characters; at most 100 "
                            "(it names the library and its build folder)")
    assert not os.path.exists(tmp_path / "build")


# the fast tier keeps the deepest damage (a parser's recursion); the others
# take the same path to a rebuild: the full tier (tests/conftest.py)
@pytest.mark.parametrize("damage", ["nested", pytest.param("folder", marks=pytest.mark.compile),
                                    pytest.param("garbage", marks=pytest.mark.compile)])
@pytest.mark.compile
def test_a_damaged_stamp_is_a_rebuild(tmp_path, damage):
    folder = tmp_path / "build"
    assert loads(fp_call("m10", folder, 1)) == "1"
    stamp = folder / ".up_to_date.json"
    stamp.unlink()
    if damage == "nested":
        stamp.write_text("[" * 100000 + "]" * 100000)
    elif damage == "folder":
        (stamp / "inside").mkdir(parents=True)
    else:
        stamp.write_bytes(b"\xff\xfe{")
    assert loads(fp_call("m10", folder, 1)) == "1"
    assert loads(fp_call("m10", folder, 2)) == "2"


def test_a_missing_compiler_is_named(tmp_path):
    line = _error(fp_call("m11", tmp_path / "build", 1), env=environ(cxx="/nonexistent/g++"))
    assert line == ("ERROR BuildError: load(m11): build failed: CXX '/nonexistent/g++': compiler not found "
                    "(set CXX to an installed C++ compiler)")


def test_a_damaged_cache_config_gives_scons_own_message(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "config").write_text("{not json")
    line = _error(dict(fp_call("m12", tmp_path / "build", 1), cache_dir=str(cache)))
    assert line == (f"ERROR BuildError: load(m12): build failed: CACHEDIR={cache}: Failed to read cache "
                    "configuration for " f"{cache} (a damaged `config` there: remove it, or choose another CACHEDIR)")


@pytest.mark.compile  # six loads on ever smaller disks: the full tier (tests/conftest.py)
def test_a_full_disk_names_the_path_and_leaves_nothing_half_written(tmp_path):
    _as_root()
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m (a private mount namespace) is not allowed here: no small file system "
                    "can be mounted to fill")
    disk = tmp_path / "disk"
    disk.mkdir()
    folder = disk / "build"
    outcomes = []
    for size in ("24k", "64k", "96k", "112k", "120k", "4m"):
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
               f'mount -t tmpfs -o size={size},mode=700 none {disk} && "$@"; rc=$?; '
               f'find {disk} -name "*.tmp" | sed "s/^/LEFT /"; exit $rc', "sh"] + command(
                   fp_call("m13", folder, 1), THEN_FAKE)
        proc = subprocess.run(cmd, env=environ(), capture_output=True, text=True, timeout=300)
        assert "LEFT " not in proc.stdout, proc.stdout
        if proc.returncode == 0:
            assert loaded_value(proc.stdout) == "1"
            outcomes.append("loaded")
            continue
        errors = [line for line in proc.stdout.splitlines() if line.startswith("ERROR")]
        assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr[-3000:]
        assert "No space left on device" in proc.stdout, proc.stdout
        outcomes.append(errors[0])
    assert len([o for o in outcomes if o != "loaded"]) >= 2, outcomes   # full at two stages at least
