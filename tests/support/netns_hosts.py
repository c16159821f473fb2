"""Test hosts that really are other hosts, as far as a build can tell: each
a network namespace of its own, joined to the build's namespace by a veth
link, on a /24 the test makes and removes (not a test module).

    with netns_hosts.network(["a", "b"], hidden=[clone_root, REPO]) as net:
        a = net.hosts["a"]                     # a.address: 10.X.Y.2
        a.start(["distccd", ...])              # in a's namespace; the hidden folders do not exist there
        net.run(["python", ...], cwd=clone)    # in the build's namespace (reaches a, b and its own loopback)
        net.link_down("a")                     # a's link, from the build's side

Layout: the build's namespace holds a bridge with X.Y.1, and one veth per
host, whose other end is the host's `eth0` with X.Y.2, X.Y.3, ...  Nothing
is added to the machine's own namespace: the addresses exist only on links
made here, and nothing else can be reached from either side.  The /24 is
chosen at random among 10.0.0.0/8's, away from every route of the
machine's namespace, so that no address can be mistaken for a real one.

A host's processes run in a mount namespace of their own in which each
`hidden` folder (the clones, this checkout, the venv) is an empty,
unreadable tmpfs: a compile there cannot work by accident through a path
the build machine has.  Everything started carries AGF_TEST_HOSTS=<tag> in
its environment.  On exit (a failing test included) every process in each
namespace is killed, then the namespaces are deleted, which removes their
links, and the folders its servers were given (`Network.folder`) are
removed; `leftovers(tag)` says what would still be there.  Namespaces are
named `agfh-<pid>-<n>-<role>`, the servers' folders carry the tag in their
name (`/tmp/agf-distccd-agfh-<pid>-<n>-XXXX`): those left by a session
that was killed are removed by the next one once its pid is gone.

`missing()` says why no host can be made here (not root, no `ip` or
`unshare`, namespaces refused); `skip_or_fail()` skips with that reason (or
that of a missing server program), or fails where AGF_HOSTS_REQUIRED is
set (.ci/run sets it).
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import os
import random
import re
import shutil
import signal
import subprocess
import stat
import sys
import tempfile
import time

from support.processes import running_with_env

PREFIX = "agfh"
MARKER = "AGF_TEST_HOSTS"
REQUIRED = "AGF_HOSTS_REQUIRED"
_NAME = re.compile(rf"^{PREFIX}-(\d+)-")
# a server's folder: agf-<server>-agfh-<pid>-<n>-XXXX in the temporary folder
_FOLDER = re.compile(rf"^agf-[a-z-]+-{PREFIX}-(\d+)-\d+-")
# In a host: make each hidden folder an empty tmpfs nobody can read, then run the command.
_HIDE = ('n=$1; shift; while [ "$n" -gt 0 ]; do mount -t tmpfs -o size=4k,mode=000 agf-hidden "$1" || exit 97; '
         'shift; n=$((n-1)); done; exec "$@"')
_seq = [0]
_live: list = []
_missing: list = []


def _ip(*args, check=True) -> str:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def missing() -> str | None:
    """Why test hosts cannot be made on this machine, or None."""
    if not _missing:
        _missing.append(_why_not())
    return _missing[0]


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "test hosts need root (network and mount namespaces): run the tests as root"
    absent = [p for p in ("ip", "unshare") if not shutil.which(p)]
    if absent:
        return f"{' and '.join(absent)} not installed (Debian's iproute2 and util-linux; .ci/run installs them)"
    probe = f"{PREFIX}-{os.getpid()}-probe"
    proc = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"cannot make a network namespace here: {proc.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def skip_or_fail(also: str | None = None) -> None:
    """Skip the calling test when no host can be made here, or for `also`
    (a program the test needs is missing): with the reason, or fail with
    it where REQUIRED is set."""
    import pytest
    why = missing() or also
    if why:
        if os.environ.get(REQUIRED):
            pytest.fail(f"{REQUIRED} is set, but {why}")
        pytest.skip(why)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _namespaces() -> list[str]:
    return [line.split()[0] for line in _ip("netns", "list", check=False).splitlines() if line.strip()]


def _remove(ns: str) -> None:
    """Kill every process in namespace `ns`, then delete it (and its links)."""
    deadline = time.monotonic() + 10
    while True:
        pids = [int(p) for p in _ip("netns", "pids", ns, check=False).split()]
        if not pids or time.monotonic() > deadline:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    _ip("netns", "del", ns, check=False)


def sweep_stale() -> None:
    """Remove the namespaces of sessions that are gone (killed before their
    teardown), and their servers' folders."""
    for ns in _namespaces():
        m = _NAME.match(ns)
        if m and not _alive(int(m.group(1))):
            _remove(ns)
    for path in _folders(""):
        m = _FOLDER.match(os.path.basename(path))
        if m and not _alive(int(m.group(1))):
            _remove_folder(path)


def _folders(tag: str) -> list[str]:
    """The servers' folders in the temporary folder whose network's tag starts with `tag`."""
    root = tempfile.gettempdir()
    return sorted(os.path.join(root, name) for name in os.listdir(root)
                  if _FOLDER.match(name) and f"-{tag}" in name[3:])


# The users a server's folder may belong to: ours, or the one a server drops to
# (host_servers gives distccd's to `nobody`); anything else of that name is
# another user's, and left alone.
_OWNERS = {os.geteuid(), 65534}


def _remove_folder(path: str) -> None:
    """`path` removed if it is still there (its server's cleanup may have
    removed it first), a folder, and ours or the server's."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode) and st.st_uid in _OWNERS:   # (rmtree follows no link inside)
        shutil.rmtree(path, ignore_errors=True)


def free_subnet() -> ipaddress.IPv4Network:
    """A 10.X.Y.0/24 that no route of this machine's namespace overlaps."""
    routes = []
    for line in _ip("-4", "route", "show", "table", "all", check=False).splitlines():
        for word in line.split()[:2]:   # `10.0.0.0/8 dev ...`, `local 127.0.0.1 dev lo ...`
            with contextlib.suppress(ValueError):
                routes.append(ipaddress.ip_network(word, strict=False))
                break
    for _ in range(200):
        net = ipaddress.ip_network(f"10.{random.randrange(1, 255)}.{random.randrange(1, 255)}.0/24")
        if not any(net.overlaps(r) for r in routes):
            return net
    raise RuntimeError("no free 10.X.Y.0/24 among this machine's routes")


def leftovers(tag: str) -> dict:
    """What of the networks whose tag starts with `tag` (`agfh-<pid>-` for
    all of a session's) still exists: namespaces, links in this machine's
    namespace, running processes carrying such a tag, and their servers'
    folders."""
    procs = running_with_env(f"{MARKER}={tag}")
    links = [w.rstrip(":").split("@")[0] for line in _ip("-o", "link", "show", check=False).splitlines()
             for w in line.split()[1:2] if w.startswith(tag)]
    return {"namespaces": [ns for ns in _namespaces() if ns.startswith(tag)], "links": links, "processes": procs,
            "folders": _folders(tag)}


class Host:
    def __init__(self, network: "Network", role: str, address: str):
        self.network, self.role, self.address = network, role, address
        self.ns = f"{network.tag}-{role}"
        self.procs: list[subprocess.Popen] = []

    def command(self, cmd: list, hidden=None) -> list:
        """`cmd` as run in this host: its network, and a mount namespace in
        which the `hidden` folders (default: the network's) are empty."""
        hidden = self.network.hidden if hidden is None else [os.path.realpath(str(h)) for h in hidden]
        if not hidden:
            return ["ip", "netns", "exec", self.ns, *[str(c) for c in cmd]]
        return ["ip", "netns", "exec", self.ns, "unshare", "--mount", "--propagation", "private", "--",
                "sh", "-c", _HIDE, "sh", str(len(hidden)), *hidden, *[str(c) for c in cmd]]

    def start(self, cmd: list, hidden=None, **popen) -> subprocess.Popen:
        """A server in this host, in a session of its own; killed on exit."""
        env = dict(popen.pop("env", None) or os.environ, **{MARKER: self.network.tag})
        proc = subprocess.Popen(self.command(cmd, hidden), env=env, start_new_session=True,
                                stdin=subprocess.DEVNULL, **popen)
        self.procs.append(proc)
        return proc

    def run(self, cmd: list, hidden=None, **kw) -> subprocess.CompletedProcess:
        env = dict(kw.pop("env", None) or os.environ, **{MARKER: self.network.tag})
        return subprocess.run(self.command(cmd, hidden), env=env, **kw)

    def pids(self) -> list[int]:
        return [int(p) for p in _ip("netns", "pids", self.ns, check=False).split()]

    def kill(self) -> None:
        """SIGKILL every process of this host (its servers and what they run)."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)

    def wait_listening(self, port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
        """Until something in this host accepts on address:port (from the build's side)."""
        deadline = time.monotonic() + timeout
        probe = [sys.executable, "-c", "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)",
                 self.address, str(port)]
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[-1]} in host {self.role} exited {proc.returncode}")
            if self.network.run(probe, capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"nothing listens on {self.address}:{port} in host {self.role} after {timeout} s")


class Network:
    def __init__(self, roles: list, hidden=()):
        _seq[0] += 1
        self.pid = os.getpid()
        self.tag = f"{PREFIX}-{self.pid}-{_seq[0]}"
        self.build_ns = f"{self.tag}-build"
        self.hidden = [os.path.realpath(str(h)) for h in hidden if os.path.isdir(str(h))]
        self.subnet = free_subnet()
        addresses = list(self.subnet.hosts())
        self.gateway = str(addresses[0])
        self.hosts = {role: Host(self, role, str(addresses[i + 1])) for i, role in enumerate(roles)}
        self.folders: list[str] = []

    def folder(self, prefix: str) -> str:
        """A new folder for a server's files (mkdtemp: ours, 0700), removed with the network."""
        path = tempfile.mkdtemp(prefix=f"{prefix}{self.tag}-")
        self.folders.append(path)
        return path

    def up(self) -> "Network":
        _live.append(self)
        b, plen = self.build_ns, self.subnet.prefixlen
        _ip("netns", "add", b)
        _ip("-n", b, "link", "set", "lo", "up")
        _ip("-n", b, "link", "add", "br0", "type", "bridge")
        _ip("-n", b, "addr", "add", f"{self.gateway}/{plen}", "dev", "br0")
        _ip("-n", b, "link", "set", "br0", "up")
        for role, host in self.hosts.items():
            _ip("netns", "add", host.ns)
            _ip("-n", b, "link", "add", f"v-{role}", "type", "veth", "peer", "name", "eth0", "netns", host.ns)
            _ip("-n", b, "link", "set", f"v-{role}", "master", "br0", "up")
            _ip("-n", host.ns, "addr", "add", f"{host.address}/{plen}", "dev", "eth0")
            _ip("-n", host.ns, "link", "set", "eth0", "up")
            _ip("-n", host.ns, "link", "set", "lo", "up")
        return self

    def down(self) -> None:
        for host in self.hosts.values():
            _remove(host.ns)
            for proc in host.procs:   # reap: their pids are gone from the namespace
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
        _remove(self.build_ns)
        for path in self.folders:
            _remove_folder(path)
        if self in _live:
            _live.remove(self)

    def command(self, cmd: list) -> list:
        return ["ip", "netns", "exec", self.build_ns, *[str(c) for c in cmd]]

    def run(self, cmd: list, **kw) -> subprocess.CompletedProcess:
        env = dict(kw.pop("env", None) or os.environ, **{MARKER: self.tag})
        return subprocess.run(self.command(cmd), env=env, **kw)

    def popen(self, cmd: list, **kw) -> subprocess.Popen:
        env = dict(kw.pop("env", None) or os.environ, **{MARKER: self.tag})
        return subprocess.Popen(self.command(cmd), env=env, **kw)

    def link_down(self, role: str) -> None:
        _ip("-n", self.build_ns, "link", "set", f"v-{role}", "down")

    def link_up(self, role: str) -> None:
        _ip("-n", self.build_ns, "link", "set", f"v-{role}", "up")


@contextlib.contextmanager
def network(roles: list, hidden=()):
    """A Network up for the block, torn down after it, pass or fail."""
    sweep_stale()
    net = Network(roles, hidden)
    try:
        yield net.up()
    finally:
        net.down()


@atexit.register
def _down_at_exit() -> None:
    # A session leaving without its fixtures' teardown (an interrupt): its networks go with it.
    for net in list(_live):
        if net.pid == os.getpid():   # (never a forked child's to remove)
            with contextlib.suppress(Exception):
                net.down()
