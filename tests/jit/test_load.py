"""load() and load_inline() (site_scons/autograd_scons/jit/loader.py) with the stand-in
compiler (tests/support/fakecxx.sh): what each fresh process compiles, compared
with what `scons` compiles for the same edit; the lock across processes
(four at once, one builds; a killed builder never blocks or poisons the
next); the errors.  The stand-in's libraries are real (empty) shared
objects, so each process really loads the published library: what these
tests cannot see is whether the ops work, which tests/jit/test_load_compile.py
checks with the real compiler."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from support.load_helpers import FAKE_CXX, RUNNER, command, environ, example, run, stall, start, wait_for
from support.scons_helpers import clone, compiled, edit, scons
from support.spec_facts import REPO

from autograd_scons.base import lock
from autograd_scons.buildenv import runner


FORMULA = ("self: grad * alpha", "self: alpha * grad")  # scale's backward, in derivatives.yaml
HEADER = ("namespace myops {", "namespace myops {\n// an edit\n")  # include/myops/backward_helpers.h
# The example's cold objects, and a formula edit's: its edit TU and the digest
# of the generated code (codegen/emit/cache_key.py), a TU with no header.
COLD = ["bindings_0.os", "bucket_0.os", "cache_key.os", "kernels.os"]
EDIT = ["cache_key.os", "edited_0.os"]


@pytest.fixture
def ext(tmp_path):
    """(load() arguments building in tmp/build, the environment)."""
    call = example(tmp_path / "specs")
    call.update(build_directory=str(tmp_path / "build"), verbose=True)
    # (a shared precompiled prelude of its own: no other test's is found)
    return call, environ(AUTOGRAD_EXTENSIONS_DIR=str(tmp_path / "ext"))


def library(call):
    return os.path.join(call["build_directory"], "myops.so")


@pytest.mark.compile
def test_a_second_process_compiles_nothing_and_says_nothing(ext):
    call, env = ext
    first = run(call, env).stdout
    assert sorted(compiled(first)) == COLD
    # the tool's and the generator's modules are inputs of the stamp: editing either rebuilds
    with open(os.path.join(call["build_directory"], ".up_to_date.json")) as f:
        inputs = [row[0] for row in json.load(f)["inputs"]]
    package = os.path.join(REPO, "site_scons", "autograd_scons", "")
    for folder in ("codegen", "tool"):
        assert any(p.startswith(os.path.join(package, folder, "")) and p.endswith(".py") for p in inputs), folder
    log = os.path.join(call["build_directory"], "build.log")
    before = os.stat(log).st_mtime_ns
    quiet = run(dict(call, verbose=False), env).stdout
    assert quiet.splitlines() == ["LOADED torch.ops.myops"]   # silent, and SCons not even started
    assert os.stat(log).st_mtime_ns == before
    header = os.path.join(call["extra_include_paths"][0], "myops", "backward_helpers.h")
    os.utime(header)   # touched, bytes unchanged: still no SCons
    assert run(dict(call, verbose=False), env).stdout.splitlines() == ["LOADED torch.ops.myops"]
    assert os.stat(log).st_mtime_ns == before
    flagged = run(dict(call, extra_cflags=["-DMY_FLAG"]), env).stdout   # a flag: everything recompiles
    assert sorted(compiled(flagged)) == COLD


@pytest.mark.compile
def test_a_quiet_build_prints_one_line_per_stage(ext, example_ops):
    call, env = ext
    lines = run(dict(call, verbose=False), env).stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == ["load(myops)"] * 3, lines
    functions, kernels = len(example_ops.functions), len(example_ops.kernels)   # (the views' _copy ops included)
    assert (f"generated gen/: {functions} Functions + {kernels} op kernels: {functions + kernels} regenerated"
            in lines[0]) and "jobs" in lines[0]
    assert lines[1] == "load(myops): compiled 4 of 4 objects"
    assert lines[2] == "load(myops): linking obj/myops.so"


def precompiles(out):
    """The prelude's precompiles in a verbose build's output."""
    return [line for line in out.splitlines() if " -x c++-header " in line]


@pytest.mark.compile
def test_the_prelude_is_precompiled_only_where_it_pays(ext):
    # The example's 3 TUs are too few for the precompile to pay
    # (codegen/engine/buckets.py, prelude_pays): pch="auto" leaves it out.  pch=True
    # builds it, and switching either way recompiles every object: none
    # built with the other setting is reused.  (The digest's TU, which
    # includes nothing, never takes it: codegen/emit/cache_key.py.)
    call, env = ext
    three = [o for o in COLD if o != "cache_key.os"]
    cold = run(call, env).stdout
    assert sorted(compiled(cold)) == COLD and not precompiles(cold) and "prelude_pch.h" not in cold
    forced = run(dict(call, pch=True), env).stdout
    assert len(precompiles(forced)) == 1 and sorted(compiled(forced)) == three
    objects = [line for line in forced.splitlines() if re.search(r"-o \S+\.os -c ", line)]
    assert len(objects) == 3 and all(re.search(r"-include \S+/_prelude/\w+/torch_prelude\.h ", line)
                                     for line in objects)
    off = run(dict(call, pch=False), env).stdout
    assert sorted(compiled(off)) == three and not precompiles(off)
    assert compiled(run(call, env).stdout) == []   # "auto" is off here: the same objects
    # ... except for the edit TUs, which take it under "auto" (the one pch=True
    # built is still up to date: no precompile).
    edit(call["derivatives"], *FORMULA)
    first = run(call, env).stdout
    assert not precompiles(first) and compiled(first) == EDIT
    [line] = [x for x in first.splitlines() if re.search(r"-o \S+edited_0\.os -c ", x)]
    assert re.search(r"-include \S+/_prelude/\w+/torch_prelude\.h ", line)


def scons_compiles(tmp_path, change):
    """What `scons` recompiles for `change(specs folder)` on the example,
    without the precompiled prelude, as load()'s pch="auto" builds the
    example's cold TUs (`scons`'s PCH=auto would precompile it)."""
    root = clone(tmp_path / "repo")
    args = ("-j2", f"CXX={FAKE_CXX}", "PCH=0")
    scons(root, *args)
    change(os.path.join(root, "specs"))
    return sorted(compiled(scons(root, *args).stdout))


# the full tier: a formula, a header and a listed source's edit (the fast tier keeps load()'s other builds:
# four processes at once, bad input, a swapped library)
@pytest.mark.parametrize("what", [pytest.param("formula", marks=pytest.mark.compile),
                                  pytest.param("header", marks=pytest.mark.compile),
                                  pytest.param("source", marks=pytest.mark.compile)])
def test_an_edit_recompiles_what_scons_would(ext, tmp_path, what):
    call, env = ext
    run(call, env)
    old = open(library(call), "rb").read()

    def change(specs):
        if what == "formula":
            edit(os.path.join(specs, "derivatives.yaml"), *FORMULA)
        elif what == "header":
            edit(os.path.join(specs, "include", "myops", "backward_helpers.h"), *HEADER)
        else:  # a listed source (staged under a VariantDir in the build folder)
            with open(os.path.join(specs, "csrc", "kernels.cpp"), "a") as f:
                f.write("// an edit\n")

    change(os.path.dirname(call["derivatives"]))
    out = run(call, env).stdout
    ours = sorted(compiled(out))
    assert ours and ours == scons_compiles(tmp_path, change)
    # A formula edit: its edit TU alone, which takes the precompiled prelude
    # (the first edit precompiles it; a build without edits never does).
    assert len(precompiles(out)) == (what == "formula")
    if what == "formula":
        assert ours == EDIT
    if what == "formula":  # (the stand-in's objects do not depend on headers: no relink for those)
        assert open(library(call), "rb").read() != old   # relinked and published
    assert compiled(run(call, env).stdout) == []
    if what == "formula":   # the next edit reuses the precompiled prelude
        edit(call["derivatives"], *reversed(FORMULA))
        again = run(call, env).stdout
        assert compiled(again) == EDIT and not precompiles(again)


def _flow_style(text):
    """The same yaml list with each entry a flow mapping on its line (`- {func: ...}`)."""
    import yaml
    return "".join("- " + yaml.safe_dump(e, default_flow_style=True, width=10**6).strip() + "\n"
                   for e in yaml.safe_load(text))


@pytest.mark.compile
def test_load_inline_from_strings(tmp_path):
    """The example's native functions in flow style: valid yaml the generator
    parses, so load() returns torch.ops.myops (issue 44, bug 3: a regex over
    the lines found no `func:` there and returned torch.ops.aten)."""
    specs = example(tmp_path / "specs")
    texts = {k: open(specs[k]).read() for k in ("native_functions", "derivatives")}
    texts["native_functions"] = _flow_style(texts["native_functions"])
    assert texts["native_functions"].startswith("- {")
    kernels = open(specs["sources"][0]).read()
    call = {"inline": True, "name": "myops", **texts, "cpp_sources": kernels,
            "extra_include_paths": specs["extra_include_paths"], "includes": specs["includes"],
            "build_directory": str(tmp_path / "build"), "verbose": True}
    out = run(call, environ()).stdout
    assert sorted(compiled(out)) == ["bindings_0.os", "bucket_0.os", "cache_key.os", "main.os"]
    assert out.splitlines()[-1] == "LOADED torch.ops.myops"
    written = os.path.join(tmp_path, "build", "inline", "derivatives.yaml")
    mtime = os.stat(written).st_mtime_ns
    assert compiled(run(call, environ()).stdout) == [] and os.stat(written).st_mtime_ns == mtime
    call["derivatives"] = texts["derivatives"].replace(*FORMULA)   # an edit of the text: its Function recompiles
    edited = compiled(run(call, environ()).stdout)
    assert edited and "main.os" not in edited


@pytest.mark.compile
def test_four_processes_at_once_one_builds(ext):
    call, env = ext
    procs = [start(call, env) for _ in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [o[0][-2000:] + o[1][-2000:] for o in outs]
    builders = [i for i, (out, _) in enumerate(outs) if compiled(out)]
    assert len(builders) == 1, [o[0] for o in outs]
    assert sorted(compiled(outs[builders[0]][0])) == COLD
    assert all(out.strip().endswith("LOADED torch.ops.myops") for out, _ in outs)
    # The others waited and said for whom (or came after the build and found it done).
    for i, (_, err) in enumerate(outs):
        waits = [line for line in err.splitlines() if "waiting for pid" in line]
        assert len(waits) <= 1 and all(f"pid {procs[builders[0]].pid}," in w for w in waits), err


def _stall(call, step):
    return stall(call["build_directory"], step)


def _stalled_compilers(folder):
    """fakecxx processes still stalled in `folder` (killed builds' leftovers)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if b"fakecxx.sh" in cmd and os.readlink(f"/proc/{pid}/cwd") == folder:
                found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("step", [pytest.param("compile", marks=pytest.mark.compile), "link"])
@pytest.mark.compile
def test_a_killed_builder_never_blocks_nor_poisons_the_next_load(ext, step):
    call, env = ext
    if step == "link":  # a library is loaded already; the edit's relink is killed
        run(call, env)
        edit(call["derivatives"], *FORMULA)
    before = open(library(call), "rb").read() if step == "link" else None
    marker = _stall(call, step)
    builder = start(call, env)
    wait_for(marker, builder)
    os.kill(builder.pid, signal.SIGKILL)
    builder.communicate()
    # Nothing half-written is in place: the old library, or none yet.
    if before is None:
        assert not os.path.exists(library(call))
    else:
        assert open(library(call), "rb").read() == before
    os.unlink(os.path.join(call["build_directory"], ".fakecxx_stall"))
    start_s = time.monotonic()
    out = run(call, env).stdout
    assert time.monotonic() - start_s < 60      # no stale lock to wait out
    assert "waiting for pid" not in out and out.strip().endswith("LOADED torch.ops.myops")
    assert not _stalled_compilers(call["build_directory"])   # the dead build's compiler was killed
    published = open(library(call), "rb").read()
    assert published == open(os.path.join(call["build_directory"], "obj", "myops.so"), "rb").read()
    assert published != before and b"half-written" not in published
    assert compiled(run(call, env).stdout) == []   # and it is consistent


@pytest.mark.compile
def test_the_timeout_names_the_folder_and_the_holder(ext):
    call, env = ext
    with lock.BuildLock(call["build_directory"], label="test"):
        proc = run(dict(call, timeout=0.5), env, check=False)
        by_variable = run(call, dict(env, AUTOGRAD_BUILD_TIMEOUT="0.3"), check=False)
    for p in (proc, by_variable):
        assert p.returncode == 3
        [line] = [x for x in p.stdout.splitlines() if x.startswith("ERROR")]
        assert line.startswith(f"ERROR LockTimeout: {call['build_directory']}: still being built by pid "
                               f"{os.getpid()} after waiting")
        assert f"load(myops): waiting for pid {os.getpid()}, which is building" in p.stderr


def error(call, env=None):
    proc = run(call, env or environ(), check=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = [x for x in proc.stdout.splitlines() if x.startswith("ERROR")]
    assert len(lines) == 1, proc.stdout
    return lines[0]


def test_bad_input_one_clear_error_each(ext, tmp_path):
    call, env = ext
    assert error(dict(call, name="my-ops")) == ("ERROR LoadError: load('my-ops'): the name must be a Python "
                                                "identifier (it names the library and its build folder)")
    missing = os.path.join(tmp_path, "specs", "csrc", "nope.cpp")
    assert error(dict(call, sources=[missing])) == f"ERROR LoadError: load(myops): source {missing}: no such file"
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    line = error(dict(call, build_directory=str(blocker / "build")))
    assert line.startswith(f"ERROR FolderError: load(myops): cannot write the build folder {blocker}/build")
    assert not os.path.exists(call["build_directory"])
    inline = {"inline": True, "name": "myops", "native_functions": 3, "derivatives": "",
              "build_directory": call["build_directory"]}
    assert error(inline) == "ERROR LoadError: load(myops): native_functions must be a string"
    assert error(dict(call, pch="on")) == "ERROR LoadError: load(myops): pch must be 'auto', True or False, not 'on'"


def test_changed_inputs_in_the_same_process_are_refused(ext):
    call, env = ext
    then = (f"assert load(**call) is ops\n"   # unchanged: the same namespace
            f"os.utime(call['derivatives'])\n"    # touched, not changed: still the same
            f"assert load(**call) is ops\n"
            f"open(call['derivatives'], 'a').write('\\n# edited\\n')\n"
            f"try:\n    load(**call)\nexcept Exception as e:\n    print('AGAIN', type(e).__name__, e)\n")
    out = run(call, env, then=then).stdout   # (RUNNER's `call`: these arguments)
    [line] = [x for x in out.splitlines() if x.startswith("AGAIN")]
    assert line == (f"AGAIN LoadError load(myops): {library(call)} is already loaded in this process and its "
                    "inputs (sources, specs or headers) changed since; torch.ops cannot load a library twice "
                    "under one name: start a new process to build and load the new one")


@pytest.mark.compile
def test_a_failed_compile_raises_its_first_error_and_the_log(ext, tmp_path):
    call, env = ext
    failing = tmp_path / "failcxx"
    failing.write_text(f"#!/bin/sh\ncase \"$*\" in *kernels.cpp*) echo 'kernels.cpp:12:3: error: boom' >&2; "
                       f"echo 'kernels.cpp:14:1: error: later' >&2; exit 1;; esac\nexec {FAKE_CXX} \"$@\"\n")
    failing.chmod(0o755)
    line = error(call, environ(cxx=str(failing)))
    log = os.path.join(call["build_directory"], "build.log")
    assert line == f"ERROR BuildError: load(myops): build failed: kernels.cpp:12:3: error: boom"
    out = run(call, environ(cxx=str(failing)), check=False).stdout
    assert f"  full log: {log}" in out and "kernels.cpp:14:1: error: later" in open(log).read()
    assert not os.path.exists(library(call))


@pytest.mark.compile
def test_bad_yaml_raises_the_line_scons_prints(ext, tmp_path):
    call, env = ext
    edit(call["derivatives"], *FORMULA)
    edit(call["derivatives"], "self: alpha * grad", "self: alpha * grad\n  nosuch: grad")
    line = error(call)
    root = clone(tmp_path / "repo")
    edit(os.path.join(root, "specs", "derivatives.yaml"), *FORMULA)
    edit(os.path.join(root, "specs", "derivatives.yaml"), "self: alpha * grad", "self: alpha * grad\n  nosuch: grad")
    [theirs] = [x for x in scons(root, f"CXX={FAKE_CXX}", check=False).stderr.splitlines() if x.startswith("scons: ***")]
    located = theirs[len("scons: *** "):].replace(os.path.join(root, "specs", "derivatives.yaml"),
                                                  call["derivatives"])
    assert line == f"ERROR BuildError: load(myops): build failed: {located}"


def test_jobs_follow_max_jobs_then_affinity_then_the_cgroup_quota(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5})
    monkeypatch.setattr(runner, "_cgroup_cpus", lambda: None)
    monkeypatch.setenv("MAX_JOBS", "3")
    assert runner.default_jobs() == 3
    monkeypatch.setenv("MAX_JOBS", "lots")   # not all digits: ignored, as cpp_extension does
    assert runner.default_jobs() == 6
    monkeypatch.setattr(runner, "_cgroup_cpus", lambda: 2)
    assert runner.default_jobs() == 2


@pytest.mark.parametrize("files, cpus", [({"cpu.max": "150000 100000\n"}, 2), ({"cpu.max": "max 100000\n"}, None),
                                         ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3),
                                         ({}, None)])
def test_the_cgroup_quota_is_read_from_v2_then_v1(tmp_path, files, cpus):
    for rel, text in files.items():
        os.makedirs(os.path.dirname(tmp_path / rel), exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert runner._cgroup_cpus(str(tmp_path)) == cpus


@pytest.mark.compile
def test_autograd_launcher_goes_before_every_compile_not_the_link(ext, tmp_path):
    call, env = ext
    calls = tmp_path / "launched.txt"
    launcher = tmp_path / "launcher"
    launcher.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\nexec \"$@\"\n")
    launcher.chmod(0o755)
    out = run(dict(call, pch=True), dict(env, AUTOGRAD_LAUNCHER=str(launcher))).stdout
    launched = calls.read_text().splitlines()
    assert len(launched) == len([x for x in out.splitlines() if " -c " in x and " -o " in x]) == 5  # with the prelude
    assert len(precompiles("\n".join(launched))) == 1
    assert not any("myops.so" in x for x in launched)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.10 keeps the decorator's own call line: "
                    "tests/package/test_public_api.py checks that shape under 3.10")
@pytest.mark.compile
def test_a_failed_load_shows_no_internal_frames(ext):
    """A failed load() left uncaught, in a new interpreter: the traceback is
    the caller's line, then the one located line and the log's path; none of
    the tool's frames, no chained exception."""
    call, env = ext
    edit(call["derivatives"], "self: grad * alpha", "self: grad * alpha\n  nosuch: grad")
    uncaught = RUNNER[:RUNNER.index("try:")] + (
        "try:\n    fn(**call)\nexcept Exception as e:\n"
        "    import traceback\n    print('FRAMES', [f.filename for f in traceback.extract_tb(e.__traceback__)])\n"
        "fn(**call)\n")
    proc = subprocess.run([sys.executable, "-c", uncaught, json.dumps(call)], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [frames] = [x for x in proc.stdout.splitlines() if x.startswith("FRAMES")]
    assert frames == "FRAMES ['<string>']"     # the caller's own frame alone
    shown = proc.stderr[proc.stderr.index("Traceback (most recent call last):"):].splitlines()
    log = os.path.join(call["build_directory"], "build.log")
    assert re.fullmatch(r'  File "<string>", line \d+, in <module>', shown[1]), shown   # (-c shows no source)
    assert re.fullmatch(r"autograd_scons\.buildenv\.runner\.BuildError: load\(myops\): build failed: "
                        + re.escape(call["derivatives"]) + r":\d+: entry '.*': .*nosuch.*", shown[2]), shown
    assert shown[3:] == [f"  full log: {log}"], shown
