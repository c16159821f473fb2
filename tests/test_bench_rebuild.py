"""The CI quick mode of benchmarks/bench_rebuild.py checks the cache-hit
counts: it passes on a sound tree, and fails, saying what missed, when a
cache key is broken on purpose.

The key is broken through the benchmark's test hook
(BENCH_REBUILD_BREAK_KEY=OP): every scons run it starts then salts OP's key
with random bytes, as an unstable key would (a hash over something that
changes from run to run).  On the no-op the tool's manifest fast path still
answers (no key is computed), but the next edit re-keys every Function and
OP, whose specs did not change, misses the cache.

Stand-in compiles only (--standin-only): what is checked is what SCons and
the tool decide to rebuild, not what the compiler makes of it.  Both runs
share one work folder, so the second one starts from an up-to-date tree.
"""

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="the benchmark runs on torch's own specs")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "benchmarks", "bench_rebuild.py")
ARGS = ["--quick", "--standin-only", "--scenarios", "noop,formula1"]


def bench(workdir, break_key=None):
    env = {k: v for k, v in os.environ.items() if k != "BENCH_REBUILD_BREAK_KEY"}
    if break_key:
        env["BENCH_REBUILD_BREAK_KEY"] = break_key
    return subprocess.run([sys.executable, BENCH, *ARGS, "--workdir", str(workdir)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("bench_rebuild")


def test_quick_mode_passes_when_every_hit_is_a_hit(workdir):
    proc = bench(workdir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "cache-hit check failed" not in proc.stdout + proc.stderr
    table = proc.stdout
    assert "| no-op | 0 / 0 |" in table and "| 1 formula edited | 1 / 0 |" in table


def test_quick_mode_fails_on_a_cache_miss_where_a_hit_is_due(workdir):
    proc = bench(workdir, break_key="AbsBackward0")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    errors = proc.stderr
    assert "bench_rebuild: 2 cache-hit check(s) failed" in errors  # scons generate and scons
    assert ("cache-hit check failed: ours generate + compile + relink / 1 formula edited: "
            "1 cache miss(es) where a hit was due: Function(s) re-rendered to unchanged text, "
            "their key changed though their inputs did not") in errors
    # the report names the op that missed
    assert "derived info changed: 1 (AbsBackward0)" in errors
    # the no-op (manifest fast path, no key computed) was not affected
    assert "/ no-op:" not in errors
