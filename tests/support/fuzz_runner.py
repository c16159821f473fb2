"""Running the spec fuzz's mutants (tests/support/spec_fuzz.py makes them;
not a test module): each through parse, units and rendering, as
`generate` does up to the files, in a forked worker with a time limit per
mutant, so that a hang or a crash of one is its outcome, not the test
run's."""

from __future__ import annotations

import faulthandler
import json
import os
import select
import signal
import traceback
from dataclasses import dataclass
from typing import Iterator

from support.spec_fuzz import DERIVATIVES, NATIVE, Mutant


@dataclass(frozen=True)
class Outcome:
    kind: str                 # refused | accepted | unlocated | traceback | hang | signal
    detail: str = ""


def write(mutant: Mutant, folder: str) -> tuple[str, str]:
    for name, data in mutant.files:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return os.path.join(folder, NATIVE), os.path.join(folder, DERIVATIVES)


def generate(native: str, derivatives: str) -> dict[str, str]:
    """What `generate` writes, rendered in memory (no files, no compile)."""
    from autograd_scons.codegen.emit.lines import render_lines
    from autograd_scons.codegen.emit.options import EmitOptions
    from autograd_scons.codegen.engine.units import Kind, load_units
    units = load_units(native, derivatives)
    rendered: dict[str, str] = {}
    for u in units:
        rendered.update(u.render(EmitOptions(namespace="fuzz::autograd")))
    rendered.update(render_lines([u.subject for u in units if u.kind is Kind.FUNCTION]))
    return rendered


def outcome(mutant: Mutant, folder: str) -> Outcome:
    """In this process: the mutant's outcome, a hang aside."""
    from autograd_scons.base.errors import Error, SpecError
    native, derivatives = write(mutant, folder)
    try:
        generate(native, derivatives)
    except SpecError as e:
        located = e.file is not None and e.line is not None
        return Outcome("refused" if located else "unlocated", str(e)[:300])
    except Error as e:
        return Outcome("unlocated", f"{type(e).__name__}: {str(e)[:300]}")
    except Exception:
        return Outcome("traceback", traceback.format_exc()[-1500:])
    return Outcome("accepted")


class _Hang(BaseException):
    """(not an Exception: outcome() takes those for the tool's tracebacks)"""


def _alarm(signum, frame):
    raise _Hang()


def _worker(todo: list[Mutant], start: int, folder: str, timeout: float, out_fd: int) -> None:
    # (a signal is an outcome the parent reports: no fault dump of pytest's
    # faulthandler in the log, which reads as the test run crashing)
    faulthandler.disable()
    signal.signal(signal.SIGALRM, _alarm)
    with os.fdopen(out_fd, "w", buffering=1) as out:
        for i in range(start, len(todo)):
            out.write(json.dumps({"start": i}) + "\n")
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                got = outcome(todo[i], folder)
            except _Hang:
                got = Outcome("hang", f"over {timeout} s")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            out.write(json.dumps({"done": i, "kind": got.kind, "detail": got.detail}) + "\n")


def run(todo: list[Mutant], folder: str, timeout: float = 5.0) -> Iterator[tuple[Mutant, Outcome]]:
    """Each mutant's outcome, run in a forked worker (a crash or a hang of
    one is its outcome; the worker starts again after it)."""
    start = 0
    while start < len(todo):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:   # the worker
            os.close(read_fd)
            try:
                _worker(todo, start, folder, timeout, write_fd)
            finally:
                os._exit(0)
        os.close(write_fd)
        current, killed = start, False
        with os.fdopen(read_fd) as pipe:
            while True:
                ready, _, _ = select.select([pipe], [], [], timeout + 10)
                if not ready:   # stuck where the alarm cannot reach (inside C code)
                    os.kill(pid, signal.SIGKILL)
                    killed = True
                    break
                chunk = pipe.readline()
                if not chunk:
                    break
                msg = json.loads(chunk)
                if "start" in msg:
                    current = msg["start"]
                else:
                    yield todo[msg["done"]], Outcome(msg["kind"], msg["detail"])
                    current = msg["done"] + 1
        _, status = os.waitpid(pid, 0)
        if current >= len(todo):
            break
        if os.WIFSIGNALED(status) and not killed:
            yield todo[current], Outcome("signal", f"signal {os.WTERMSIG(status)}")
        else:
            yield todo[current], Outcome("hang", f"the worker stopped (status {status})")
        start = current + 1
