"""What a build does when a launcher's far side does not answer, decided
once per build, at its first launched compile (a build with nothing to
compile asks nothing):

- `LAUNCHER=distcc` with `DISTCC_FALLBACK=0` and no host of `DISTCC_HOSTS`
  answering: one line naming every host and why, and the compile fails
  (exit non-zero, nothing compiled, so nothing half-written).  distcc
  alone would say it per compile, naming one host each time.
- `LAUNCHER=sccache` with `SCCACHE_REDIS_ENDPOINT` (or `SCCACHE_REDIS`)
  not answering: one warning line, and the build's compiles run without
  sccache.  sccache alone cannot start its server without the cache and
  fails every compile after a 10 s wait.

Every other case runs the command as given.  A host answers when a TCP
connection to it opens (Redis: and answers PING) within TIMEOUT_S; the
hosts are asked side by side.  distccd logs the question as one
connection without a job.  Only the environment's settings are read (not
distcc's hosts files, not sccache's config file).  The hook is the
environment's SPAWN, which no signature includes: switching a launcher,
or its far side going down, recompiles nothing.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional
from urllib.parse import urlsplit

TIMEOUT_S = 2.0
DISTCC_PORT = 3632
REDIS_PORT = 6379
_HOST = re.compile(r"\[(?P<v6>[^\]]+)\](?::(?P<port6>\d+))?|(?P<name>[^:\[\]/,@]+)(?::(?P<port>\d+))?")


def distcc_hosts(spec: str) -> Optional[list]:
    """The (host, port) of each TCP host of a DISTCC_HOSTS value
    (`HOST[:PORT][/LIMIT][,OPTIONS]`, `--randomize` and other options
    skipped); None when some host is not one this module can judge
    (localhost, `@host` over ssh, `+zeroconf`), or there is none."""
    hosts = []
    for word in spec.split():
        if word.startswith("--"):
            continue
        address = word.split("/", 1)[0].split(",", 1)[0]
        m = _HOST.fullmatch(address)
        if m is None or word.startswith(("@", "+")) or "@" in address or m["name"] == "localhost":
            return None
        port = m["port6"] or m["port"]
        hosts.append((m["v6"] or m["name"], int(port) if port else DISTCC_PORT))
    return hosts or None


def redis_endpoint(url: str) -> Optional[tuple]:
    """(host, port) of a redis:// or rediss:// URL, else None."""
    try:
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "tcp") or not parts.hostname:
            return None
        return parts.hostname, parts.port or REDIS_PORT
    except ValueError:
        return None


def why_not(host: str, port: int, redis: bool = False) -> Optional[str]:
    """None when host:port answers, else why not (the system's words)."""
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT_S) as s:
            if redis:
                s.sendall(b"PING\r\n")
                if s.recv(64)[:1] not in (b"+", b"-"):   # +PONG, or -NOAUTH: a Redis either way
                    return "no Redis reply"
    except OSError as e:
        return e.strerror or str(e) or type(e).__name__
    return None


def _ask_all(addresses: list, redis: bool = False) -> list:
    with ThreadPoolExecutor(max_workers=min(16, len(addresses))) as pool:
        return list(pool.map(lambda a: why_not(a[0], a[1], redis), addresses))


def _name(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def distcc_verdict(environ) -> Optional[str]:
    """The line that stops the build, or None (some host answers, or a
    local fallback is allowed, or the hosts cannot be judged)."""
    if environ.get("DISTCC_FALLBACK") != "0":
        return None
    hosts = distcc_hosts(environ.get("DISTCC_HOSTS", ""))
    if not hosts:
        return None
    reasons = _ask_all(hosts)
    if any(r is None for r in reasons):
        return None
    down = "; ".join(f"{_name(h, p)}: {r}" for (h, p), r in zip(hosts, reasons))
    return (f"scons: *** LAUNCHER=distcc: no host in DISTCC_HOSTS answers ({down}), and "
            "DISTCC_FALLBACK=0 forbids compiling here: nothing compiled")


def sccache_verdict(environ) -> Optional[str]:
    """The warning that drops sccache for this build, or None."""
    url = environ.get("SCCACHE_REDIS_ENDPOINT") or environ.get("SCCACHE_REDIS") or ""
    where = redis_endpoint(url)
    if where is None:
        return None
    host, port = where
    reason = why_not(host, port, redis=True)
    if reason is None:
        return None
    return (f"scons: warning: LAUNCHER=sccache: its cache {url} does not answer ({reason}): "
            "compiling here without sccache")


class GuardedSpawn:
    """SPAWN that asks `verdict` once, at the first command starting with
    the launcher; then either stops that command and every later one
    (`stop`), runs them without the launcher (not `stop`), or runs all as given."""

    def __init__(self, spawn: Callable, launcher: list, verdict: Callable[[], Optional[str]], stop: bool,
                 say: Callable[[str], None]):
        self.spawn, self.launcher, self.verdict, self.stop, self.say = spawn, launcher, verdict, stop, say
        self._lock = threading.Lock()
        self._asked = False
        self._line: Optional[str] = None

    def _ask(self) -> Optional[str]:
        with self._lock:
            if not self._asked:
                self._line = self.verdict()
                self._asked = True
                if self._line:
                    self.say(self._line)
            return self._line

    def __call__(self, sh, escape, cmd, args, env):
        n = len(self.launcher)
        # (SCons quotes only the words that need it)
        if len(args) > n and all(a in (w, escape(w)) for a, w in zip(args, self.launcher)) and self._ask():
            if self.stop:
                return 1
            args = args[n:]
            cmd = args[0]
        return self.spawn(sh, escape, cmd, args, env)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def guard(env, launcher: list, environ=os.environ) -> None:
    """Install the check that fits `launcher` (distcc, sccache) in env's SPAWN."""
    program = os.path.basename(launcher[0])
    if program == "distcc":
        env["SPAWN"] = GuardedSpawn(env["SPAWN"], launcher, lambda: distcc_verdict(environ), True, _stderr)
    elif program == "sccache":
        env["SPAWN"] = GuardedSpawn(env["SPAWN"], launcher, lambda: sccache_verdict(environ), False, _stderr)
