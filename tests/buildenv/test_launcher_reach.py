"""A launcher's far side that does not answer (buildenv/launcher_reach.py),
with the stand-in compiler and stand-in launchers named `distcc` and
`sccache` (a script that logs its arguments and runs them), on loopback
ports of the test's own:

- distcc, `DISTCC_FALLBACK=0`, no host answering: one line naming every
  host and why, exit 2, nothing launched and no object written; one host
  answering, or a fallback allowed, lets distcc run;
- sccache with a Redis endpoint that does not answer: one warning line,
  the build finishes with every compile run without sccache; one that
  answers PING keeps sccache, a port that is no Redis does not.

The same promises on hosts that really are others, with the real distcc and
sccache: tests/buildenv/test_distcc_hosts.py and test_sccache_hosts.py."""

import contextlib
import os
import socket
import threading

import pytest

from autograd_scons.buildenv import launcher_reach

from support.scons_helpers import FAKE_CXX, clone, compiled, scons

LAYOUT = ("UNITY=2", "PCH=0", "-j2", f"CXX={FAKE_CXX}")


def named_launcher(folder, name):
    """(a stand-in launcher called `name`, its log of command lines)."""
    os.makedirs(folder, exist_ok=True)
    log, path = os.path.join(folder, "launched.log"), os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec "$@"\n')
    os.chmod(path, 0o755)
    return path, log


def launched(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return f.read().splitlines()


def closed_port():
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def listening(reply=b""):
    """A loopback port that accepts, sends `reply` to what it reads, and closes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.1)   # (a closed socket does not wake accept(): the loop looks at `stop`)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn:
                if reply:
                    conn.settimeout(2)
                    with contextlib.suppress(OSError):
                        conn.recv(64)
                        conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        server.close()
        thread.join(5)


def objects(root):
    return sorted(name for _, _, names in os.walk(os.path.join(root, "build")) for name in names
                  if name.endswith(".os"))


def test_distcc_hosts_are_read_as_distcc_reads_them():
    read = launcher_reach.distcc_hosts
    assert read("10.0.0.2 10.0.0.3:4000/8,lzo --randomize [fe80::1]:3700/2") == [
        ("10.0.0.2", 3632), ("10.0.0.3", 4000), ("fe80::1", 3700)]
    # hosts this check cannot judge: no check at all
    for spec in ("localhost/2 10.0.0.2", "@build1/4", "user@build1", "+zeroconf", ""):
        assert read(spec) is None, spec
    assert launcher_reach.redis_endpoint("redis://user:pw@10.0.0.9/0") == ("10.0.0.9", 6379)
    assert launcher_reach.redis_endpoint("rediss://cache.internal:7000") == ("cache.internal", 7000)
    assert launcher_reach.redis_endpoint("unix:///run/redis.sock") is None


def test_distcc_with_no_host_answering_is_one_line_naming_every_host(tmp_path):
    root = clone(tmp_path / "a")
    distcc, log = named_launcher(str(tmp_path / "bin"), "distcc")
    a, b = closed_port(), closed_port()
    env = {"DISTCC_FALLBACK": "0", "DISTCC_HOSTS": f"127.0.0.1:{a}/2 127.0.0.1:{b}/4,lzo"}
    proc = scons(root, *LAYOUT, f"LAUNCHER={distcc}", check=False, environ=env)
    assert proc.returncode == 2
    said = [line for line in proc.stderr.splitlines() if "DISTCC_HOSTS" in line]
    assert said == [f"scons: *** LAUNCHER=distcc: no host in DISTCC_HOSTS answers (127.0.0.1:{a}: Connection "
                    f"refused; 127.0.0.1:{b}: Connection refused), and DISTCC_FALLBACK=0 forbids compiling "
                    "here: nothing compiled"]
    assert launched(log) == [] and objects(root) == []


@pytest.mark.compile
def test_sccache_with_its_redis_not_answering_says_so_once_and_compiles_without_it(tmp_path):
    root = clone(tmp_path / "a")
    sccache, log = named_launcher(str(tmp_path / "bin"), "sccache")
    url = f"redis://127.0.0.1:{closed_port()}"
    proc = scons(root, *LAYOUT, f"LAUNCHER={sccache}", environ={"SCCACHE_REDIS_ENDPOINT": url})
    assert [line for line in (proc.stdout + proc.stderr).splitlines() if url in line] == [
        f"scons: warning: LAUNCHER=sccache: its cache {url} does not answer (Connection refused): "
        "compiling here without sccache"]
    built = compiled(proc.stdout)
    assert built and objects(root) == built and launched(log) == []


def test_one_host_answering_or_a_fallback_lets_distcc_run():
    a, b = closed_port(), closed_port()
    with listening() as port:
        assert launcher_reach.distcc_verdict({"DISTCC_FALLBACK": "0",
                                              "DISTCC_HOSTS": f"127.0.0.1:{a} 127.0.0.1:{port}/2"}) is None
    assert launcher_reach.distcc_verdict({"DISTCC_HOSTS": f"127.0.0.1:{a} 127.0.0.1:{b}"}) is None
    assert launcher_reach.distcc_verdict({"DISTCC_FALLBACK": "0", "DISTCC_HOSTS": f"127.0.0.1:{a}"})


def test_a_port_that_is_no_redis_is_a_cache_that_does_not_answer():
    with listening(b"+PONG\r\n") as port:
        assert launcher_reach.sccache_verdict({"SCCACHE_REDIS_ENDPOINT": f"redis://127.0.0.1:{port}"}) is None
    with listening(b"SSH-2.0-OpenSSH_9.2\r\n") as port:   # another server on that port
        url = f"redis://127.0.0.1:{port}"
        assert launcher_reach.sccache_verdict({"SCCACHE_REDIS_ENDPOINT": url}) == (
            f"scons: warning: LAUNCHER=sccache: its cache {url} does not answer (no Redis reply): "
            "compiling here without sccache")
    assert launcher_reach.sccache_verdict({}) is None   # a disk cache: nothing to ask
