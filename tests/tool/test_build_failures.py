"""What a build does with unlucky environments and inputs: one clear line,
nothing generated lost, no interleaving (stand-in compiler throughout)."""

import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

from autograd_scons.codegen.engine.manifest import MANIFEST, read_manifest
from support.scons_helpers import FAKE_CXX, clone, compiled, edit, report, scons, snapshot, tree

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
    """The single `scons: *** ...` line of a failed run (no traceback), which
    exits 2 (SCons's code for a build error, as docs/failures.md promises)."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.startswith("scons: ***")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.compile
def test_edit_rules_an_edited_function_compiles_in_its_edit_tu_only(built_repo):
    d = os.path.join(built_repo, "specs", "derivatives.yaml")
    edit(d, "self: grad * alpha", "self: grad * alpha * 2")
    first = scons(built_repo, *EXAMPLE_ARGS, "--autograd-explain=ScaleBackward0").stdout
    # Its header is unchanged: its old text stays in its bucket, overridden at link.
    objs = compiled(first)   # and the digest of the generated code (codegen/emit/cache_key.py)
    assert len(objs) == 2 and objs[0] == "cache_key.os" and objs[1].startswith("edited_"), objs
    assert "ScaleBackward0: regenerated" in first and "overridden at link" in first
    link = [x for x in first.splitlines() if "myops_ext.so " in x and " -c " not in x]
    # No global flag: the bucket holding the old text is linked as a copy
    # whose overridden symbols are weak (the edit TU's definitions win).
    assert len(link) == 1 and "--allow-multiple-definition" not in link[0]
    (shadowing,) = [f[:-len(".cpp")] for f, text in unity_tus(built_repo).items()
                    if f.startswith("bucket_") and "functions/ScaleBackward0" in units_in(text)]
    assert f"{shadowing}.weak.os" in link[0] and f"{shadowing}.os" not in link[0]
    assert "Overriding the edited units' old text: weak copy" in first
    edit(d, "self: grad * alpha * 2", "self: grad * alpha * 3")
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout) == objs
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout) == []
    # Now its header changes (it saves `self` too): its bucket's old text
    # would not compile against it, so that bucket is rewritten, once.  The
    # kernels of scale, scale_ and scale.out save it too, and include that
    # header: theirs are rewritten as well.  What is checked is what a user
    # sees: which unity TUs' bytes changed and hold which units (their
    # `#line` markers), and which were compiled.  Its Python bindings gain
    # `_saved_self`: the binding TU is among the rewritten ones.
    before = unity_tus(built_repo)
    edit(d, "self: grad * alpha * 3", "self: grad * alpha * self.sign()")
    third = compiled(scons(built_repo, *EXAMPLE_ARGS).stdout)
    after = unity_tus(built_repo)
    changed = sorted(f for f in after if before.get(f) != after[f])
    assert third == sorted(f.replace(".cpp", ".os") for f in changed)   # exactly the rewritten TUs compiled
    alone = {u for f, text in after.items() if f.startswith("edited_") for u in units_in(text)}
    assert {"functions/ScaleBackward0", "ops/myops_scale"} <= alone
    for f, text in before.items():
        if f.startswith("bucket_") and units_in(text) & alone:
            assert f in changed and not units_in(after[f]) & alone, f   # rewritten without the old copies
    edit(d, "self: grad * alpha * self.sign()", "self: grad * alpha * self.sgn()")
    fourth = scons(built_repo, *EXAMPLE_ARGS).stdout
    (scale_tu,) = [f for f, text in after.items() if f.startswith("edited_")
                   and "functions/ScaleBackward0" in units_in(text)]
    assert compiled(fourth) == ["cache_key.os", scale_tu.replace(".cpp", ".os")]


def unity_tus(root):
    """file name -> text of each generated TU that compiles to an object of
    its own (buckets, edit TUs, and any other TU beside its object): a
    unit's own .cpp is compiled inside one of those."""
    out = {}
    for dirpath, _, names in os.walk(os.path.join(root, GEN)):
        for name in names:
            if name.endswith(".cpp") and os.path.exists(os.path.join(dirpath, name[:-4] + ".os")):
                with open(os.path.join(dirpath, name)) as f:
                    out[name] = f.read()
    return out


def units_in(text):
    """The units a unity TU holds: a bucket inlines each after a `#line 1
    "../functions/X.cpp"` marker, an edit TU `#include`s them."""
    return set(re.findall(r'^#(?:line 1|include) "\.\./((?:functions|ops)/[^"]+)\.cpp"$', text, re.M))


@pytest.mark.compile
def test_report_counts_every_object_compiled(tmp_path):
    root = clone(tmp_path / "repo")
    out = scons(root, *EXAMPLE_ARGS).stdout
    lines = report(out)
    n = len(compiled(out))
    assert f"{n} objects compiled in all ({n - 1} generated, 1 other)" in lines


@pytest.mark.compile
def test_report_counts_objects_in_a_build_folder_outside_the_checkout(tmp_path):
    # The objects live under BUILD, not under the SConstruct's folder: the
    # count once walked only the latter and said 0.
    root = clone(tmp_path / "repo")
    out = scons(root, *EXAMPLE_ARGS, f"BUILD={tmp_path / 'elsewhere'}").stdout
    n = len(compiled(out))
    assert n > 1 and f"{n} objects compiled in all ({n - 1} generated, 1 other)" in report(out)


# docs/failures.md's "bad specs" row, through `scons` on the example's own specs:
# (what to change in derivatives.yaml, the text on the line the error must
# name, what the line says).
BAD_SPECS = {
    # (the YAML parser finds the unclosed `[` on the line after it: that one is named)
    "malformed yaml": (("  self: grad * alpha\n  result: auto_linear\n",
                        "  self grad * alpha: [x\n  result: auto_linear  # unclosed above\n"),
                       "# unclosed above", "malformed YAML"),
    "no such schema": (("- name: scale(Tensor self, Scalar alpha)", "- name: scale(Tensor self, Scalar alpah)"),
                       "- name: scale(Tensor self, Scalar alpah)", "no native function has exactly this schema"),
    "unknown key": (("  self: grad * result\n", "  slef: grad * result\n"), "  slef: grad * result",
                    "'slef' is neither an argument nor an output"),
    "duplicate entry": (("- name: cube(Tensor self) -> Tensor\n",
                         "- name: cube(Tensor self) -> Tensor\n  self: grad\n\n- name: cube(Tensor self) -> Tensor\n"),
                        None, "duplicate entry"),
}


# (the kinds the parser refuses before SCons runs, tests/codegen/parse, keep
# two cases here in the fast tier; the others run in the full tier)
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.compile)
                                  if c in ("duplicate entry", "no such schema") else c for c in sorted(BAD_SPECS)])
def test_bad_specs_through_scons_are_one_located_line_exit_2_and_touch_nothing(built_repo, case):
    (old, new), marked, says = BAD_SPECS[case]
    d = os.path.join(built_repo, "specs", "derivatives.yaml")
    edit(d, old, new)
    with open(d) as f:
        lines = f.read().splitlines()
    # the line named: the edited one, or (a duplicate) the second `cube` entry
    marked = marked or [x for x in lines if x.startswith("- name: cube(")][0]
    line_no = [i for i, x in enumerate(lines, 1) if marked in x][-1]
    gen = os.path.join(built_repo, GEN)
    before = snapshot(gen)
    proc = scons(built_repo, *EXAMPLE_ARGS, check=False)
    line = one_error_line(proc)   # exit 2
    assert line.startswith(f"scons: *** {d}:{line_no}: "), line
    assert says in line, line
    if case != "malformed yaml":
        assert ": entry '" in line, line
    assert compiled(proc.stdout) == []
    assert snapshot(gen) == before   # nothing generated touched


def test_kernel_file_clash_is_a_located_error(built_repo):
    nf = os.path.join(built_repo, "specs", "native_functions.yaml")
    with open(nf, "a") as f:
        # foo.bar beside foo_bar moves to myops_foo__bar (codegen/emit/op_kernels/kernels.py): a third op takes that too
        f.write("\n- func: myops::foo.bar(Tensor self) -> Tensor\n\n"
                "- func: myops::foo_bar(Tensor self) -> Tensor\n\n"
                "- func: myops::foo__bar(Tensor self) -> Tensor\n")
    before = tree(os.path.join(built_repo, GEN))
    line = one_error_line(scons(built_repo, *EXAMPLE_ARGS, check=False))
    assert "native_functions.yaml:" in line and "myops::foo__bar" in line and "myops::foo.bar" in line
    assert "ops/myops_foo__bar.cpp" in line and "rename one of them" in line
    assert tree(os.path.join(built_repo, GEN)) == before


def test_overlong_op_name_is_a_located_error(built_repo):
    nf = os.path.join(built_repo, "specs", "native_functions.yaml")
    with open(nf, "a") as f:
        f.write(f"\n- func: myops::{'x' * 300}(Tensor self) -> Tensor\n")
    line = one_error_line(scons(built_repo, *EXAMPLE_ARGS, check=False))
    assert "native_functions.yaml:" in line and "too long for a file name" in line


EDIT_SCALE = ("self: grad * alpha", "self: grad * alpha * 2")


@pytest.fixture(scope="module")
def cold_unity_after_the_edit(tmp_path_factory):
    """The unity TUs of a cold build of the specs with EDIT_SCALE, elsewhere."""
    cold = clone(tmp_path_factory.mktemp("cold") / "repo")
    edit(os.path.join(cold, "specs", "derivatives.yaml"), *EDIT_SCALE)
    scons(cold, *EXAMPLE_ARGS)
    return unity_tus(cold)


# (a directory: the other damages, through `scons` too, are tests/codegen/engine/test_incremental.py's and
# tests/tool/test_scons_incremental.py::test_damaged_manifest_warns_once_and_recompiles_nothing)
@pytest.mark.parametrize("damage", [pytest.param("directory", marks=pytest.mark.compile)])
def test_a_damaged_manifest_is_one_warning_and_a_build_with_the_cold_layout(built_repo, cold_unity_after_the_edit,
                                                                            damage):
    # After an edit the layout is no longer the cold one (the edited Function
    # compiles in an edit TU); an untrusted manifest must not keep that: the
    # unity TUs are those of a cold build of the same specs elsewhere.
    edit(os.path.join(built_repo, "specs", "derivatives.yaml"), *EDIT_SCALE)
    assert any(o.startswith("edited_") for o in compiled(scons(built_repo, *EXAMPLE_ARGS).stdout))
    m = os.path.join(built_repo, GEN, ".autograd_manifest")
    if damage == "directory":
        os.unlink(m)
        os.makedirs(os.path.join(m, "x"))
    else:
        with open(m, "rb") as f:
            data = f.read()
        with open(m, "wb") as f:
            f.write(data[: len(data) // 2])
    proc = scons(built_repo, *EXAMPLE_ARGS)
    warnings = [x for x in (proc.stdout + proc.stderr).splitlines() if "warning" in x.lower()]
    assert len(warnings) == 1 and ".autograd_manifest" in warnings[0], warnings
    if damage == "directory":
        assert "a directory, not a file" in warnings[0]
    assert os.path.isfile(m)
    assert unity_tus(built_repo) == cold_unity_after_the_edit
    assert not any(name.startswith("edited_") for name in unity_tus(built_repo))
    again = scons(built_repo, *EXAMPLE_ARGS)
    assert "warning" not in again.stderr and compiled(again.stdout) == []


@pytest.mark.compile
def test_read_only_output_gives_one_line_and_loses_nothing(built_repo):
    if os.geteuid() == 0:
        # The tests run as root (CI too), and root ignores permission bits: a
        # chmod would not make the write fail.  So the rename that ends every
        # write is faked to fail the way EACCES would, naming its target.
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
    assert named_generated_file(built_repo, line, "Permission denied").endswith("functions/ScaleBackward0.cpp")
    assert tree(os.path.join(built_repo, GEN)) == before
    os.chmod(os.path.join(built_repo, GEN, "functions"), 0o755)
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout)  # from the cold layout: see below
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout) == []


def test_full_disk_gives_one_line_and_the_next_build_recovers(built_repo):
    prelude = ("import errno, os\n_open = os.open\n"
               "def full(path, flags, *a, **k):\n"
               "    if flags & os.O_CREAT and str(path).endswith('.tmp'):\n"
               "        raise OSError(errno.ENOSPC, 'No space left on device', path)\n"
               "    return _open(path, flags, *a, **k)\n"
               "os.open = full\n")
    edit(os.path.join(built_repo, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    before = tree(os.path.join(built_repo, GEN))
    line = one_error_line(scons(built_repo, *EXAMPLE_ARGS, prelude=prelude, check=False))
    assert "No space left on device" in line and "free some space" in line
    # (the temporary being written, beside the file it replaces)
    assert "ScaleBackward0.cpp" in os.path.basename(named_generated_file(built_repo, line, "No space left on device"))
    assert tree(os.path.join(built_repo, GEN)) == before   # what was generated before is kept
    # The manifest was set aside before the first write: the next build
    # starts from the cold layout (ScaleBackward0 back in its bucket).
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout)
    assert compiled(scons(built_repo, *EXAMPLE_ARGS).stdout) == []


def named_generated_file(root, line, error):
    """The file `scons: *** AutogradFunctions('gen'): FILE: ERROR ...` names,
    if it is in the generated folder."""
    m = re.match(rf"scons: \*\*\* (?:AutogradFunctions\('[^']*'\): )?(\S+): {error}", line)
    assert m, line
    path = os.path.realpath(os.path.join(root, m.group(1)))
    return path.startswith(os.path.realpath(os.path.join(root, GEN)) + os.sep) and path


def test_users_file_in_generated_folder_is_left_alone(built_repo):
    mine = os.path.join(built_repo, GEN, "functions", "notes.txt")
    with open(mine, "w") as f:
        f.write("mine\n")
    edit(os.path.join(built_repo, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    out = scons(built_repo, *EXAMPLE_ARGS).stdout
    assert os.path.exists(mine)
    assert any("not generated by this tool, left alone: functions/notes.txt" in x for x in report(out))


@pytest.mark.parametrize("arg,needle", [("UNITY=x", "non-negative integer"),
                                         pytest.param("UNITY=-2", "non-negative integer", marks=pytest.mark.compile)])
def test_bad_unity_is_one_line(built_repo, arg, needle):
    before = tree(os.path.join(built_repo, GEN))
    line = one_error_line(scons(built_repo, *EXAMPLE_ARGS, arg, check=False))
    assert needle in line
    assert tree(os.path.join(built_repo, GEN)) == before


def layout_of(root, *args):
    """(unity buckets, edit TUs) that `scons generate` lays out for the
    example on a build without a trusted layout (both follow -j): the
    buckets from the report, the edit TUs from the manifest."""
    shutil.rmtree(os.path.join(root, "build", "example"), ignore_errors=True)
    line = report(scons(root, *EXAMPLE_ARGS, "generate", *args).stdout)[0]
    manifest, _ = read_manifest(os.path.join(root, GEN, MANIFEST))
    return int(re.search(r"; compiled as (\d+) buckets?[;,]", line).group(1)), manifest.layout.slots


@pytest.mark.skipif((os.cpu_count() or 1) < 2,
                    reason="the default -j is the CPU count: on one CPU it cannot be told from -j1")
@pytest.mark.compile
def test_jobs_default_to_the_cpu_count_and_an_explicit_j_wins(tmp_path, monkeypatch, example_ops):
    # docs/compile-layout.md's counts at -j jobs (UNITY=auto): the buckets fill the cores
    # the binding TU and the example's kernels.cpp leave; one edit TU a job.
    n = len(example_ops.functions) + len(example_ops.kernels)

    def expected(jobs):
        return max(min(max(jobs - 2, 1), -(-n // 8)), -(-n // 96)), min(jobs, 8)
    assert expected(1) != expected(os.cpu_count())
    root = clone(tmp_path / "repo")
    assert layout_of(root) == expected(os.cpu_count())   # no -j: every CPU, as ninja does
    assert layout_of(root, "-j1") == expected(1)
    monkeypatch.setenv("SCONSFLAGS", "-j1")               # an explicit -j from the environment wins too
    assert layout_of(root) == expected(1)
    assert layout_of(root, "-j6")[0] == expected(6)[0] > 1   # past the other TUs, the buckets take the cores


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


@pytest.mark.compile
def test_two_builds_of_one_tree_never_interleave(built_repo):
    # The first build holds the lock while it generates, until the second
    # has said that it waits (not a fixed sleep: under load the second may
    # start late); the second then finds everything up to date.
    edit(os.path.join(built_repo, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    release = os.path.join(built_repo, "release")
    # The checkout's package first on sys.path, as SCons puts it, so that the
    # patch is on the generator this build runs (a bare top-level generator
    # was a second copy that the build never called).
    slow = ("import os, sys, time\nsys.path.insert(0, os.path.abspath('site_scons'))\n"
            "import autograd_scons.codegen.engine.incremental as i\n_u = i.update\n"
            "def update(*a, **k):\n"
            f"    deadline = time.monotonic() + 60\n"
            f"    while not os.path.exists({release!r}) and time.monotonic() < deadline:\n"
            "        time.sleep(0.02)\n"
            "    return _u(*a, **k)\n"
            "i.update = update\nimport sys; sys.path.insert(0, '.')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOGRAD_")}
    run = "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())"
    first = subprocess.Popen([sys.executable, "-c", slow + run, *EXAMPLE_ARGS], cwd=built_repo, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_until_locked(os.path.join(built_repo, GEN, ".autograd_lock"))
    second = subprocess.Popen([sys.executable, "-c", run, *EXAMPLE_ARGS], cwd=built_repo,
                              env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    said = []
    for line in second.stdout:  # until it says that it waits (or exits)
        said.append(line)
        if "waiting" in line:
            break
    with open(release, "w"):
        pass
    out1, err1 = first.communicate(timeout=120)
    out2, err2 = second.communicate(timeout=120)
    out2 = "".join(said) + out2
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    # the waiting build names the first one's pid (the `python -c` running SCons)
    assert f"being built by another process (pid {first.pid})" in out2 and "waiting" in out2
    assert any(o.startswith("edited_") for o in compiled(out1)) and compiled(out2) == []


@pytest.mark.compile
def test_dry_run_of_a_fresh_tree_with_the_precompiled_prelude_writes_nothing(tmp_path):
    # PCH=auto is on for the example: `-n` once failed on the prelude's
    # wrapper header, which only a real run writes; the shared prelude's
    # folder is not made either.
    root, shared = clone(tmp_path / "repo"), tmp_path / "prelude"
    proc = scons(root, *EXAMPLE_ARGS, "-n", "PCH=1", f"PRELUDE_DIR={shared}")
    assert "Shared precompiled prelude: " in proc.stdout
    assert not os.path.exists(os.path.join(root, GEN)) and not shared.exists()
