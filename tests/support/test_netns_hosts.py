"""The test hosts themselves (support/netns_hosts.py): nothing of them
outlives a test session, even one whose test fails or that is killed.

A pytest session of its own runs a test that brings hosts up, starts
servers in them (distccd, the accept-and-close stand-in, a plain
process) and fails; afterwards no namespace, no link and no process of
that session is left, nor its servers' folders.  A session killed
(SIGKILL) mid-test leaves them, and the next network's sweep removes
them, since their session is gone.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from support import netns_hosts
from support.spec_facts import REPO

pytestmark = pytest.mark.compile

FAILING = '''
import shutil, time
import pytest
from support import host_servers, netns_hosts


@pytest.fixture
def net():
    with netns_hosts.network(["a", "b"]) as n:
        yield n


def test_fails_with_servers_up(net):
    if shutil.which("distccd"):
        host_servers.Distccd(net.hosts["a"], jobs=1)
    host_servers.AcceptAndClose(net.hosts["b"])
    host_servers.AcceptAndClose(net.hosts["a"], port=3633).cleanup()   # a server cleaned up before the teardown
    net.hosts["b"].start(["sleep", "600"])
    print("HOSTS UP", flush=True)
    if {wait}:
        time.sleep(600)
    assert False, "this test fails with its hosts up"
'''


def session(tmp_path, wait):
    """The session running FAILING, its output in a file (servers it leaves
    would hold a pipe open)."""
    path = tmp_path / "test_hosts_session.py"
    path.write_text(FAILING.format(wait=wait))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "tests"))
    env.pop(netns_hosts.REQUIRED, None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts=",
           "--rootdir", str(tmp_path), str(path)]
    with open(tmp_path / "session.out", "w") as out:
        return subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)


def output(tmp_path):
    return (tmp_path / "session.out").read_text()


def test_a_failing_test_leaves_no_namespace_link_or_server(tmp_path):
    netns_hosts.skip_or_fail()
    proc = session(tmp_path, wait=False)
    proc.wait(timeout=300)
    out = output(tmp_path)
    assert proc.returncode == 1 and "HOSTS UP" in out and "1 failed" in out, out[-3000:]
    assert " error" not in out.splitlines()[-1], out[-3000:]   # the teardown itself raised nothing
    assert netns_hosts.leftovers(f"{netns_hosts.PREFIX}-{proc.pid}-") == {
        "namespaces": [], "links": [], "processes": [], "folders": []}


def test_a_killed_sessions_hosts_are_swept_by_the_next(tmp_path):
    netns_hosts.skip_or_fail()
    proc = session(tmp_path, wait=True)
    try:
        deadline = time.monotonic() + 120
        while "HOSTS UP" not in output(tmp_path):
            assert proc.poll() is None and time.monotonic() < deadline, output(tmp_path)[-3000:]
            time.sleep(0.1)
        tag = f"{netns_hosts.PREFIX}-{proc.pid}-"
        left = netns_hosts.leftovers(tag)
        assert len(left["namespaces"]) == 3 and left["processes"] and left["folders"]
        os.kill(proc.pid, signal.SIGKILL)   # no teardown, no atexit
        proc.wait(timeout=60)
        assert netns_hosts.leftovers(tag)["namespaces"]
    finally:
        if proc.poll() is None:
            proc.kill()
    netns_hosts.sweep_stale()
    deadline = time.monotonic() + 10
    while netns_hosts.leftovers(tag)["processes"] and time.monotonic() < deadline:
        time.sleep(0.1)   # (killed processes are reaped by init)
    assert netns_hosts.leftovers(tag) == {"namespaces": [], "links": [], "processes": [], "folders": []}
