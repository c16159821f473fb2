"""A distcc daemon on the loopback address, for tests/buildenv/test_launcher.py and
benchmarks/bench_distcc.py (not a benchmark itself).

    with loopback_distccd(jobs=4) as d:
        env = dict(os.environ, **d.client_env())   # DISTCC_HOSTS=127.0.0.1:<port>/4 ...
        ... scons LAUNCHER=distcc ...
        d.compiles()                               # [(status, ms, source), ...] from its log

distccd listens on 127.0.0.1 only, allows 127.0.0.1 only, on a free port of
its own.  It runs in the foreground (--no-detach --daemon) in a session of
its own, so its pid is ours and stopping it (SIGTERM to that process group,
SIGKILL if it lingers) also stops its preforked children; `stop()` checks
that none is left.  Started as root it drops to the distcc user, so its log
lives in a folder of its own under the system temp folder, open to that user
(pytest's tmp_path is not).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

# What Debian's distcc package installs: compilers distccd may run are the
# names linked in this folder (update-distcc-symlinks).
WHITELIST = "/usr/lib/distcc"
_SUMMARY = re.compile(r"\(dcc_job_summary\) client: \S+ (\w+) .*?time:(\d+)ms \S+ (\S+)\s*$")


def job_summaries(log: str) -> list[tuple[str, int, str]]:
    """(status such as COMPILE_OK, milliseconds, source as distccd names it)
    per job line of a distccd log (a connection without a job has no source)."""
    return [(m[1], int(m[2]), m[3]) for m in map(_SUMMARY.search, log.splitlines()) if m]


def missing() -> str | None:
    """Why distcc cannot be used here, or None."""
    absent = [p for p in ("distcc", "distccd") if not shutil.which(p)]
    if absent:
        return (f"{' and '.join(absent)} not installed (Debian's distcc package; .ci/run installs it "
                "with apt-get when apt-get is available)")
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _group_alive(pgid: int) -> list[int]:
    """Pids of processes in process group pgid that are not zombies."""
    alive = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state ppid pgrp ...
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(name))
    return alive


class Daemon:
    def __init__(self, jobs: int):
        self.jobs = jobs
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="distccd-")
        os.chmod(self.dir, 0o777)  # the distcc user writes its log here
        self.log = os.path.join(self.dir, "distccd.log")
        self.state = os.path.join(self.dir, "client-state")  # DISTCC_DIR (ours, not the daemon's)
        os.makedirs(self.state)
        cmd = ["distccd", "--no-detach", "--daemon", "--listen", "127.0.0.1", "--allow", "127.0.0.1",
               "--port", str(self.port), "--jobs", str(jobs), "--log-file", self.log,
               "--log-level", "info"]
        if not any(os.path.exists(os.path.join(WHITELIST, c)) for c in ("g++", "c++")):
            cmd.append("--enable-tcp-insecure")  # no whitelist: still loopback-only
        self.proc = subprocess.Popen(cmd, start_new_session=True, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            self._wait_listening()
        except RuntimeError:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def _wait_listening(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace")
                self.stop()
                raise RuntimeError(f"distccd exited {self.proc.returncode}: {err.strip()} {self.log_text()[-2000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"distccd not listening on 127.0.0.1:{self.port} after {timeout} s")

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}/{self.jobs}"

    def client_env(self) -> dict:
        """The distcc client's settings: this daemon only, never compile locally."""
        return {"DISTCC_HOSTS": self.hosts, "DISTCC_FALLBACK": "0", "DISTCC_SKIP_LOCAL_RETRY": "1",
                "DISTCC_DIR": self.state}

    def log_text(self) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def compiles(self) -> list[tuple[str, int, str]]:
        """(status such as COMPILE_OK, milliseconds, source as distccd names it) per job."""
        return job_summaries(self.log_text())

    def stop(self) -> None:
        """SIGTERM to the daemon's process group, SIGKILL after 10 s; then
        check that nothing of it is left running."""
        pgid = self.proc.pid
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait)
            deadline = time.monotonic() + wait
            while _group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.proc.returncode is not None and not _group_alive(pgid):
                break
        self.proc.stderr.close()
        left = _group_alive(pgid)
        if left:
            raise RuntimeError(f"distccd processes still running after SIGKILL: {left}")


@contextlib.contextmanager
def loopback_distccd(jobs: int = 2, keep_log: str | None = None):
    """A Daemon, stopped (and its folder removed) on exit, pass or fail;
    `keep_log`: copy its log there first."""
    d = Daemon(jobs)
    try:
        yield d
    finally:
        try:
            d.stop()
        finally:
            if keep_log:
                with contextlib.suppress(FileNotFoundError):
                    shutil.copy(d.log, keep_log)
            shutil.rmtree(d.dir, ignore_errors=True)
