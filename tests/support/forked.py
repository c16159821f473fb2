"""Processes forked from one that has already imported torch (not a test module).

A fresh `python -c ...` that imports torch costs ~2 s of CPU before it does
anything, and the load() tests start dozens of them: that import was most of
the fast tier's time.  A server process imports torch once; each `spawn` forks
it, so the child starts where a notebook or a training script stands after
`import torch`: its own pid, environment, folder and files, no autograd_scons
imported, no library loaded in torch.ops.  That is the same point after which
bench_load.py times load().  PyTorch's DataLoader forks its workers the same
way (after `import torch`, the default start method on Linux).

The server is single-threaded and answers one JSON line per request:
`spawn` (fork a child running some code) and `poll` (reap it, or not yet).
A child's output goes to files, read back once it has exited.  Tests that must
see a new interpreter start, e.g. under another Python, exec one instead.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Optional

SERVER = r"""
import json, os, sys, traceback
import torch  # the import every child is forked after

def child(request):
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    os.environ.clear()
    os.environ.update(request["env"])
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

_server: Optional[subprocess.Popen] = None


def _stop(server: subprocess.Popen) -> None:
    server.stdin.close()   # EOF: the server's loop ends
    server.wait()


def _ask(request: dict) -> dict:
    global _server
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True)
        atexit.register(_stop, _server)
    _server.stdin.write(json.dumps(request) + "\n")
    _server.stdin.flush()
    answer = _server.stdout.readline()
    if not answer:
        raise RuntimeError(f"the fork server exited with {_server.wait()}")
    return json.loads(answer)


class Forked:
    """The parts of subprocess.Popen the tests use, for a forked child."""

    def __init__(self, code: str, argv: list, env: dict, cwd: Optional[str] = None):
        self._dir = tempfile.mkdtemp(prefix="forked-")
        self._out, self._err = os.path.join(self._dir, "stdout"), os.path.join(self._dir, "stderr")
        self.args = argv
        self.returncode: Optional[int] = None
        self._texts: Optional[tuple] = None
        self.pid = _ask({"op": "spawn", "code": code, "argv": argv, "env": env, "cwd": cwd or os.getcwd(),
                         "stdout": self._out, "stderr": self._err})["pid"]

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = _ask({"op": "poll", "pid": self.pid})["returncode"]
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.005
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
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


def run(code: str, argv: list, env: dict, timeout: Optional[float] = None) -> subprocess.CompletedProcess:
    proc = Forked(code, argv, env)
    try:
        out, err = proc.communicate(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
