"""distcc across test hosts that really are others (support/netns_hosts.py):
each host a network namespace on a veth link to the build's, running
Debian's distccd on its own address, in a mount namespace where the
clones, this checkout and torch's package do not exist.

- Two hosts: the example (PCH=0, DISTCC_FALLBACK=0) compiles on both, job
  counts from each host's distccd log, none locally; the library passes
  the example's checks; the next build is a no-op.
- Faults, each a test, each build then checked (the library's checks) and
  followed by a next build that compiles only what the faulty one did not
  finish: one host's processes SIGKILLed while it compiles; one host's
  link set down while it compiles (distcc notices after
  DISTCC_IO_TIMEOUT); a host that accepts and closes every connection;
  every host down with DISTCC_FALLBACK=0 (one line naming both hosts,
  exit 2, no object written). A lost host leaves none of its jobs' files in
  the machine's temporary folder.

The fault builds compile the example without its Python bindings and with
two buckets (PYTHON=0 UNITY=2: 4 TUs at -O0, the buckets and kernels.cpp ~10 s of CPU each, the
cache key's digest ~1 s) to keep
the compile tier short.
"""

import contextlib
import os
import pwd
import re
import sys
import tempfile
import time

import pytest

from support import host_servers, netns_hosts, proof_share
from support.library_check import check_example_library
from support.scons_helpers import clone, compiled
from support.spec_facts import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import _distccd  # noqa: E402

# (one commit in three: tests/buildenv/test_launcher.py's loopback distccd
# runs on every commit)
pytestmark = [pytest.mark.compile, pytest.mark.slow, proof_share.in_turn(0, "the distcc hosts' module")]

LIB = os.path.join("build", "example", "myops_ext.so")
EXAMPLE = ("UNITY=2", "PCH=0", "OPT=-O0")
SMALL = ("UNITY=2", "PCH=0", "OPT=-O0", "PYTHON=0")
SMALL_TUS = ["bucket_0.cpp", "bucket_1.cpp", "cache_key.cpp", "kernels.cpp"]
# A host whose link is down is noticed when a read from it waits this long.
IO_TIMEOUT_S = 40
# distcc's words for a compile it ran here after all (naming the source, or,
# when every host is backed off, not)
_LOCAL = re.compile(r"failed to distribute (\S+) to \S+, running locally instead|"
                    r"remote compilation of '(\S+)' failed, retrying locally|"
                    r"(failed to distribute), running locally instead")


@pytest.fixture
def net(tmp_path_factory):
    """Hosts a and b (and c, for the stand-in) with the clones, this
    checkout and torch's package hidden in them."""
    netns_hosts.skip_or_fail(_distccd.missing())
    import importlib.util
    torch_dir = list(importlib.util.find_spec("torch").submodule_search_locations)[0]
    with netns_hosts.network(["a", "b", "c"], hidden=[tmp_path_factory.getbasetemp(), REPO, torch_dir]) as n:
        yield n


@pytest.fixture
def daemons(net):
    ds = {r: host_servers.Distccd(net.hosts[r], jobs=1) for r in ("a", "b")}
    yield ds
    for d in ds.values():
        d.cleanup()


def client_env(tmp_path, hosts, **more):
    state = tmp_path / "distcc-state"
    state.mkdir(exist_ok=True)
    return dict({"DISTCC_HOSTS": " ".join(hosts), "DISTCC_DIR": str(state)}, **more)


def environ(env):
    return host_servers.client_environ(env, "distcc")


def build(net, root, *args, env):
    """scons in the build's namespace: (exit status, stdout, stderr)."""
    proc = net.run(host_servers.scons_command(root, *args), env=environ(env), capture_output=True, text=True, timeout=900)
    return proc.returncode, proc.stdout, proc.stderr


def ok(result):
    rc, out, err = result
    assert rc == 0, f"scons exited {rc}\n{out[-3000:]}\n{err[-3000:]}"
    return out, err


def sources(out):
    return sorted(os.path.basename(line.split()[-1]) for line in out.splitlines()
                  if re.search(r" -o \S+\.os? -c ", line))


def remote_ok(daemon):
    return sorted(os.path.basename(src) for status, _, src in daemon.compiles() if status == "COMPILE_OK")


def local_fallbacks(err):
    """(sources distcc compiled here, how many more it compiled here unnamed)."""
    found = _LOCAL.findall(err)
    return sorted(os.path.basename(a or b) for a, b, _ in found if a or b), sum(1 for *_, c in found if c)


def ran_elsewhere(unfinished, other, err):
    """Every unfinished TU ran on the `other` host or here (by distcc's word)."""
    named, unnamed = local_fallbacks(err)
    rest = set(unfinished) - set(remote_ok(other)) - set(named)
    assert len(rest) <= unnamed, (unfinished, remote_ok(other), named, unnamed, err[-2000:])


def no_op(net, root, *args, env):
    out, _ = ok(build(net, root, *args, env=env))
    assert compiled(out) == [] and f"`{LIB}' is up to date" in out


def test_distcc_compiles_on_both_hosts_and_nowhere_else(net, daemons, tmp_path):
    a, b = daemons["a"], daemons["b"]
    root = clone(tmp_path / "clone")
    assert not os.path.exists(f"/proc/{a.proc.pid}/root{root}")   # the host cannot see the clone
    env = client_env(tmp_path, [a.entry, b.entry], DISTCC_FALLBACK="0")
    out, err = ok(build(net, root, *EXAMPLE, "-j2", "LAUNCHER=distcc", env=env))
    built = sources(out)
    assert built == ["bindings_0.cpp", "bucket_0.cpp", "bucket_1.cpp", "cache_key.cpp", "kernels.cpp"]
    on_a, on_b = remote_ok(a), remote_ok(b)
    assert on_a and on_b, (on_a, on_b)
    # every compile ran on a host, each once, and none here
    assert sorted(on_a + on_b) == built
    assert all(status == "COMPILE_OK" for d in (a, b) for status, _, _ in d.compiles())
    assert local_fallbacks(err) == ([], 0)
    check_example_library(root, os.path.join(root, LIB))
    no_op(net, root, *EXAMPLE, "-j2", "LAUNCHER=distcc", env=env)


def start_build(net, root, tmp_path, env):
    out, err = open(tmp_path / "build.out", "w+"), open(tmp_path / "build.err", "w+")
    proc = net.popen(host_servers.scons_command(root, *SMALL, "-j2", "LAUNCHER=distcc"), env=environ(env), stdout=out,
                     stderr=err, text=True)
    return proc, out, err


def finish(proc, out, err, timeout=600):
    rc = proc.wait(timeout=timeout)
    out.seek(0)
    err.seek(0)
    return rc, out.read(), err.read()


def wait_compiling(daemon, proc, limit=300):
    """Until `daemon`'s host runs a compiler (then: its job is unfinished)."""
    deadline = time.monotonic() + limit
    while not daemon.compiling():
        assert proc.poll() is None, "the build ended before the host got a job"
        assert time.monotonic() < deadline, "the host never got a job"
        time.sleep(0.05)


def check_rerouted(victim, other, out, err):
    """Every TU compiled; what the victim did not finish ran on `other` or here."""
    built = sources(out)
    assert built == SMALL_TUS
    unfinished = sorted(set(built) - set(remote_ok(victim)))
    assert unfinished, "the victim finished every job: the fault hit nothing"
    ran_elsewhere(unfinished, other, err)


def left_in_tmp(since: float, daemons: dict) -> list:
    """What the hosts' distccd (user nobody) and its compilers wrote to the
    machine's temporary folder since `since`, besides the daemons' own
    folders: a job's files that a killed or cut-off host never removes,
    which must go with the host's folder."""
    nobody = pwd.getpwnam("nobody").pw_uid
    top = tempfile.gettempdir()
    found = []
    for name in os.listdir(top):
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(os.path.join(top, name))
            if st.st_uid == nobody and st.st_mtime >= since:
                found.append(name)
    ours = {os.path.basename(d.dir) for d in daemons.values()}
    return sorted(set(found) - ours)


@pytest.mark.parametrize("fault", ["distccd_killed", "link_down"])
def test_a_host_lost_mid_build_leaves_a_right_library(net, daemons, tmp_path, fault):
    since = time.time() - 1
    a, b = daemons["a"], daemons["b"]
    root = clone(tmp_path / "clone")
    env = client_env(tmp_path, [a.entry, b.entry], DISTCC_IO_TIMEOUT=str(IO_TIMEOUT_S))
    proc, out, err = start_build(net, root, tmp_path, env)
    try:
        wait_compiling(a, proc)
        if fault == "distccd_killed":
            net.hosts["a"].kill()   # SIGKILL: distccd, its children, their compilers
        else:
            net.link_down("a")
        result = finish(proc, out, err)
    finally:
        if proc.poll() is None:
            proc.kill()
    out_text, err_text = ok(result)
    assert left_in_tmp(since, daemons) == []
    check_rerouted(a, b, out_text, err_text)
    check_example_library(root, os.path.join(root, LIB))
    no_op(net, root, *SMALL, "-j2", "LAUNCHER=distcc", env=env)


def test_a_host_that_accepts_and_closes_leaves_a_right_library(net, daemons, tmp_path):
    c = net.hosts["c"]
    stand_in = host_servers.AcceptAndClose(c)
    b = daemons["b"]
    root = clone(tmp_path / "clone")
    try:
        env = client_env(tmp_path, [f"{c.address}:{host_servers.DISTCC_PORT}/1", b.entry])
        out, err = ok(finish(*start_build(net, root, tmp_path, env)))
        assert stand_in.proc.poll() is None
        assert stand_in.closed() > stand_in.probes, "no job went to the stand-in"
    finally:
        stand_in.cleanup()
    assert sources(out) == SMALL_TUS
    ran_elsewhere(SMALL_TUS, b, err)   # each job the stand-in took ran on b or here
    check_example_library(root, os.path.join(root, LIB))
    no_op(net, root, *SMALL, "-j2", "LAUNCHER=distcc", env=env)


def test_every_host_down_without_fallback_is_one_line_and_nothing_written(net, daemons, tmp_path):
    a, b = daemons["a"], daemons["b"]
    root = clone(tmp_path / "clone")
    net.hosts["a"].kill()     # refuses connections
    net.link_down("b")        # does not answer at all
    env = client_env(tmp_path, [a.entry, b.entry], DISTCC_FALLBACK="0")
    rc, out, err = build(net, root, *SMALL, "-j2", "LAUNCHER=distcc", env=env)
    assert rc == 2
    said = [line for line in err.splitlines() if "DISTCC_HOSTS" in line]
    assert len(said) == 1 and a.host.address in said[0] and b.host.address in said[0], err[-3000:]
    assert said[0].startswith("scons: *** LAUNCHER=distcc: no host in DISTCC_HOSTS answers (")
    objects = [n for _, _, names in os.walk(os.path.join(root, "build")) for n in names if n.endswith((".os", ".so"))]
    assert objects == [] and remote_ok(a) == remote_ok(b) == []
    # The next build compiles every TU (none was finished), which a dry run shows.
    dry = ok(build(net, root, *SMALL, "-j2", "-n", "LAUNCHER=distcc", env=env))[0]
    assert sources(dry) == SMALL_TUS
