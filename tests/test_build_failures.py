"""What a build does with unlucky environments and inputs: one clear line,
nothing generated lost, no interleaving (stand-in compiler throughout)."""

import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

from codegen.layout import bucket_of, slot_of
from codegen.manifest import MANIFEST, read_manifest
from scons_helpers import FAKE_CXX, clone, compiled, edit, report, scons, tree

EXAMPLE_ARGS = (f"CXX={FAKE_CXX}",)
GEN = os.path.join("build", "example", "gen")


@pytest.fixture(scope="module")
def _built_example(tmp_path_factory):
    root = clone(tmp_path_factory.mktemp("example") / "repo")
    scons(root, *EXAMPLE_ARGS)
    return root


@pytest.fixture
def built_repo(_built_example, tmp_path):
    """A private copy of a checkout whose example is built (mtimes kept: up to date)."""
    return str(shutil.copytree(_built_example, tmp_path / "repo", symlinks=True))


def one_error_line(proc):
    """The single `scons: *** ...` line of a failed run (no traceback)."""
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.startswith("scons: ***")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_edit_rules_an_edited_function_compiles_in_its_edit_tu_only(built_repo):
    d = os.path.join(built_repo, "specs", "derivatives.yaml")
    edit(d, "self: grad * alpha", "self: grad * alpha * 2")
    first = scons(built_repo, *EXAMPLE_ARGS, "--autograd-explain=ScaleBackward0").stdout
    # Its header is unchanged: its old text stays in its bucket, overridden at link.
    objs = compiled(first)
    assert len(objs) == 1 and objs[0].startswith("edited_"), objs
    assert "ScaleBackward0: regenerated" in first and "overridden at link" in first
    link = [x for x in first.splitlines() if "myops_ext.so " in x and " -c " not in x]
    # No global flag: the bucket holding the old text is linked as a copy
    # whose overridden symbols are weak (the edit TU's definitions win).
    assert len(link) == 1 and "--allow-multiple-definition" not in link[0]
    lay = read_manifest(os.path.join(built_repo, GEN, MANIFEST))[0].layout
    shadowing = f"bucket_{bucket_of('ScaleBackward0', lay.buckets)}"
    assert f"{shadowing}.weak.os" in link[0] and f"{shadowing}.os" not in link[0]
    assert "Overriding the edited units' old text: weak copy" in first
    edit(d, "self: grad * alpha * 2", "self: grad * alpha * 3")
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout) == objs
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout) == []
    # Now its header changes (it saves `self` too): its bucket's old text
    # would not compile against it, so that bucket is rewritten, once.  The
    # kernels of scale, scale_ and scale.out save it too, and include that
    # header: theirs are rewritten as well.  Its Python bindings gain
    # `_saved_self`: the one binding TU recompiles, once.
    edit(d, "self: grad * alpha * 3", "self: grad * alpha * self.sign()")
    third = compiled(scons(built_repo, *EXAMPLE_ARGS).stdout)
    lay = read_manifest(os.path.join(built_repo, GEN, MANIFEST))[0].layout
    assert {"ScaleBackward0", "myops::scale"} <= set(lay.alone) and lay.shadowed == ()
    assert third == sorted({f"bucket_{bucket_of(u, lay.buckets)}.os" for u in lay.alone}
                           | {f"edited_{slot_of(u, lay.slots)}.os" for u in lay.alone} | {"bindings_0.os"}), third
    # The same values saved: no bindings recompile.
    edit(d, "self: grad * alpha * self.sign()", "self: grad * alpha * self.sgn()")
    fourth = scons(built_repo, *EXAMPLE_ARGS).stdout
    assert compiled(fourth) == [f"edited_{slot_of('ScaleBackward0', lay.slots)}.os"]


def test_report_counts_every_object_compiled(tmp_path):
    root = clone(tmp_path / "repo")
    out = scons(root, *EXAMPLE_ARGS).stdout
    lines = report(out)
    n = len(compiled(out))
    assert f"{n} objects compiled in all ({n - 1} generated, 1 other)" in lines


def test_report_counts_objects_in_a_build_folder_outside_the_checkout(tmp_path):
    # The objects live under BUILD, not under the SConstruct's folder: the
    # count once walked only the latter and said 0.
    root = clone(tmp_path / "repo")
    out = scons(root, *EXAMPLE_ARGS, f"BUILD={tmp_path / 'elsewhere'}").stdout
    n = len(compiled(out))
    assert n > 1 and f"{n} objects compiled in all ({n - 1} generated, 1 other)" in report(out)


def test_kernel_file_clash_is_a_located_error(built_repo):
    nf = os.path.join(built_repo, "specs", "native_functions.yaml")
    with open(nf, "a") as f:
        f.write("\n- func: myops::foo.bar(Tensor self) -> Tensor\n\n"
                "- func: myops::foo_bar(Tensor self) -> Tensor\n")
    before = tree(os.path.join(built_repo, GEN))
    line = one_error_line(scons(built_repo, *EXAMPLE_ARGS, check=False))
    assert "native_functions.yaml:" in line and "myops::foo_bar" in line and "myops::foo.bar" in line
    assert "ops/myops_foo_bar.cpp" in line
    assert tree(os.path.join(built_repo, GEN)) == before


def test_overlong_op_name_is_a_located_error(built_repo):
    nf = os.path.join(built_repo, "specs", "native_functions.yaml")
    with open(nf, "a") as f:
        f.write(f"\n- func: myops::{'x' * 300}(Tensor self) -> Tensor\n")
    line = one_error_line(scons(built_repo, *EXAMPLE_ARGS, check=False))
    assert "native_functions.yaml:" in line and "too long for a file name" in line


def test_manifest_that_is_a_directory_is_a_damaged_manifest(built_repo):
    m = os.path.join(built_repo, GEN, ".autograd_manifest")
    os.unlink(m)
    os.makedirs(os.path.join(m, "x"))
    proc = scons(built_repo, *EXAMPLE_ARGS)
    assert "a directory, not a file" in proc.stderr
    assert os.path.isfile(m)
    again = scons(built_repo, *EXAMPLE_ARGS)
    assert "warning" not in again.stderr and compiled(again.stdout) == []


def test_read_only_output_gives_one_line_and_loses_nothing(built_repo):
    if os.geteuid() == 0:
        # root ignores permission bits: make the write fail the way EACCES would.
        prelude = ("import errno, os\n_r = os.replace\n"
                   "def replace(a, b):\n"
                   "    raise PermissionError(errno.EACCES, 'Permission denied', b)\n"
                   "os.replace = replace\n")
    else:
        prelude = ""
        os.chmod(os.path.join(built_repo, GEN, "functions"), 0o555)
    edit(os.path.join(built_repo, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    before = tree(os.path.join(built_repo, GEN))
    line = one_error_line(scons(built_repo, *EXAMPLE_ARGS, prelude=prelude, check=False))
    assert "Permission denied" in line and "writable" in line
    assert tree(os.path.join(built_repo, GEN)) == before
    os.chmod(os.path.join(built_repo, GEN, "functions"), 0o755)
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout)  # from the cold layout: see below
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout) == []


def test_full_disk_gives_one_line_and_the_next_build_recovers(built_repo):
    prelude = ("import errno, builtins\n_open = builtins.open\n"
               "def full(path, mode='r', *a, **k):\n"
               "    if 'w' in mode and str(path).endswith('.tmp'):\n"
               "        raise OSError(errno.ENOSPC, 'No space left on device', path)\n"
               "    return _open(path, mode, *a, **k)\n"
               "builtins.open = full\n")
    edit(os.path.join(built_repo, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    line = one_error_line(scons(built_repo, *EXAMPLE_ARGS, prelude=prelude, check=False))
    assert "No space left on device" in line and "free some space" in line
    # The manifest was set aside before the first write: the next build
    # starts from the cold layout (ScaleBackward0 back in its bucket).
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout)
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout) == []


def test_users_file_in_generated_folder_is_left_alone(built_repo):
    mine = os.path.join(built_repo, GEN, "functions", "notes.txt")
    with open(mine, "w") as f:
        f.write("mine\n")
    edit(os.path.join(built_repo, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    out = scons(built_repo, *EXAMPLE_ARGS).stdout
    assert os.path.exists(mine)
    assert any("not generated by this tool, left alone: functions/notes.txt" in x for x in report(out))


@pytest.mark.parametrize("arg,needle", [("UNITY=x", "non-negative integer"), ("UNITY=-2", "non-negative integer")])
def test_bad_unity_is_one_line(built_repo, arg, needle):
    before = tree(os.path.join(built_repo, GEN))
    line = one_error_line(scons(built_repo, *EXAMPLE_ARGS, arg, check=False))
    assert needle in line
    assert tree(os.path.join(built_repo, GEN)) == before


def test_bad_job_count_is_one_line(built_repo):
    proc = scons(built_repo, *EXAMPLE_ARGS, "-jx", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "-j" in proc.stderr and len(proc.stderr.strip().splitlines()) <= 3, proc.stderr


def _wait_until_locked(path, timeout=60.0):
    """Until another process holds the flock on `path` (the first build has
    started generating), however loaded the machine."""
    import fcntl
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            fcntl.flock(f, fcntl.LOCK_UN)
        time.sleep(0.05)
    raise AssertionError(f"nobody took {path} within {timeout} s")


def test_two_builds_of_one_tree_never_interleave(built_repo):
    # The first build holds the lock while it generates slowly; the second
    # says it waits, then finds everything up to date.
    edit(os.path.join(built_repo, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    slow = ("import time, codegen.incremental as i\n_u = i.update\n"
            "def update(*a, **k):\n    time.sleep(3)\n    return _u(*a, **k)\n"
            "i.update = update\nimport sys; sys.path.insert(0, '.')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOGRAD_")}
    first = subprocess.Popen([sys.executable, "-c", slow + "import sys\nfrom SCons.Script.Main import main\n"
                              "sys.exit(main())", *EXAMPLE_ARGS], cwd=built_repo, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_until_locked(os.path.join(built_repo, GEN, ".autograd_lock"))
    second = scons(built_repo, *EXAMPLE_ARGS)
    out1, err1 = first.communicate(timeout=120)
    assert first.returncode == 0, err1
    assert "being built by another process (pid" in second.stdout and "waiting" in second.stdout
    assert any(o.startswith("edited_") for o in compiled(out1)) and compiled(second.stdout) == []
