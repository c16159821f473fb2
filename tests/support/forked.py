"""Processes forked from one that has already imported what they all import
(not a test module).

A fresh `python -c ...` that imports torch costs ~2 s of CPU before it does
anything, and the load() tests start dozens of them; every SCons run pays
~0.2 s of interpreter start and `import SCons.Script` before it reads an
SConstruct, and the tests run hundreds.  A server process imports those
modules once (`preload`); each `spawn` forks it, so the child starts where a
new interpreter stands right after that import: its own pid, environment
(PYTHONPATH applied to sys.path, PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE
honoured), folder and files, none of this repository's modules imported, no
library loaded in torch.ops, SCons's state as its import leaves it.  For
load() that is the point after which bench_load.py times it; PyTorch's
DataLoader forks its workers the same way (after `import torch`, the default
start method on Linux).  A child exits as an interpreter does: its atexit
handlers run, its streams are flushed.

The server is single-threaded and answers one JSON line per request:
`spawn` (fork a child running some code) and `poll` (reap it, or not yet).
A child's output goes to files, read back once it has exited.  What must see
a new interpreter start (another Python, code run before the import) execs
one instead.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Optional

SERVER = r"""
import atexit, gc, importlib, io, json, os, sys, traceback
for module in sys.argv[1].split(","):   # what every child is forked after
    importlib.import_module(module)
gc.freeze()   # what they share is never collected: no child's collection walks it (nor copies its pages)
START_PATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]

def child(request):
    env = request["env"]
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    if env.get("PYTHONUNBUFFERED"):   # as `python -u` sets its streams up
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if path != START_PATH:   # where the interpreter puts PYTHONPATH: after sys.path[0]
        sys.path[:] = sys.path[:1] + path + [p for p in sys.path[1:] if p not in START_PATH]
    os.chdir(request["cwd"])
    sys.argv = ["-c"] + request["argv"]
    code = 0
    try:
        exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as e:
        if isinstance(e.code, int) or e.code is None:
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)

for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "spawn":
        sys.stdout.flush()   # nothing buffered for the child to write again
        pid = os.fork()
        if pid == 0:
            child(request)
        answer = {"pid": pid}
    else:
        pid, status = os.waitpid(request["pid"], os.WNOHANG)
        answer = {"returncode": os.waitstatus_to_exitcode(status) if pid else None}
    print(json.dumps(answer), flush=True)
"""

_servers: dict = {}   # preload -> its server
_lock = threading.Lock()   # one request and its answer at a time


def _stop(server: subprocess.Popen) -> None:
    server.stdin.close()   # EOF: the server's loop ends
    server.wait()


def _ask(preload: str, request: dict) -> dict:
    with _lock:
        return _ask_locked(preload, request)


def _ask_locked(preload: str, request: dict) -> dict:
    server = _servers.get(preload)
    if server is None or server.poll() is not None:
        server = _servers[preload] = subprocess.Popen([sys.executable, "-c", SERVER, preload], stdin=subprocess.PIPE,
                                                      stdout=subprocess.PIPE, text=True)
        atexit.register(_stop, server)
    server.stdin.write(json.dumps(request) + "\n")
    server.stdin.flush()
    answer = server.stdout.readline()
    if not answer:
        raise RuntimeError(f"the fork server ({preload}) exited with {server.wait()}")
    return json.loads(answer)


class Forked:
    """The parts of subprocess.Popen the tests use, for a forked child."""

    def __init__(self, code: str, argv: list, env: dict, cwd: Optional[str] = None, preload: str = "torch"):
        self._dir = tempfile.mkdtemp(prefix="forked-")
        self._out, self._err = os.path.join(self._dir, "stdout"), os.path.join(self._dir, "stderr")
        self.args = argv
        self.returncode: Optional[int] = None
        self._texts: Optional[tuple] = None
        self._preload = preload
        self.pid = _ask(preload, {"op": "spawn", "code": code, "argv": argv, "env": env, "cwd": cwd or os.getcwd(),
                         "stdout": self._out, "stderr": self._err})["pid"]

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = _ask(self._preload, {"op": "poll", "pid": self.pid})["returncode"]
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.001   # a poll is a pipe round trip (~0.1 ms): ask often, not lose time
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
        return self.returncode

    def communicate(self, timeout: Optional[float] = None) -> tuple:
        """(stdout, stderr) once the child has exited; again, the same."""
        self.wait(timeout)
        if self._texts is None:
            texts = []
            for path in (self._out, self._err):
                with open(path, errors="replace") as f:
                    texts.append(f.read())
                os.unlink(path)
            os.rmdir(self._dir)
            self._texts = tuple(texts)
        return self._texts

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, 9)


def run(code: str, argv: list, env: dict, timeout: Optional[float] = None, cwd: Optional[str] = None,
        preload: str = "torch") -> subprocess.CompletedProcess:
    proc = Forked(code, argv, env, cwd, preload)
    try:
        out, err = proc.communicate(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
