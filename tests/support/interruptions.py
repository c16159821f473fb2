"""Builds interrupted at a chosen step with the stand-in compiler, and what
they leave behind (not a test module): for test_load_random.py and
tests/tool/test_interrupted_builds.py.

- `stall_at(folder, step, marker)`: the stand-in (support/fakecxx.sh) run in
  `folder` (the folder SCons runs its commands in) stops at its next `step`
  ("compile" or "link") after writing half its output, creates `marker`
  and waits a minute: the window to kill the build in.  With
  `written=True` (and the compiler `stalling_cxx()`), the step first
  writes its whole output, then makes the marker and waits until
  `unstall(folder)`: a command killed after its output was complete, or
  (released) one that finishes late;
- `wait_for(marker, proc)`: polls for the marker (fails if `proc` ends first);
- `fingerprints(path)`: the `AGF_FINGERPRINT(...)` values an object or a
  stand-in library holds (support/fingerprints.py reads them in a loaded
  library's memory instead);
- `leftovers(root)` / `end_leftovers(root)`: the processes still running in
  a folder under `root` (a killed build's orphaned compilers or SCons), and
  ending them, by pid, so that none outlives its test.
"""

from __future__ import annotations

import os
import re
import signal
import time

STALL_FILE = ".fakecxx_stall"          # read by fakecxx.sh: half the output, then a minute's sleep
STALL_AFTER_FILE = ".fakecxx_stall_after"   # read by stalling_cxx()'s wrapper: the whole output, then a wait

# fakecxx.sh, then (the step's output complete) the wait of `.fakecxx_stall_after`:
# only the first command to get there stalls (it makes the marker), until the
# file is removed (at most 2 minutes).
_WRAPPER = """#!/bin/sh
{fake_cxx} "$@" || exit $?
step=link
for a in "$@"; do
    case $a in --version | -dumpversion) exit 0 ;; -c) step=compile ;; esac
done
if [ -f {stall_after} ]; then
    line=$(cat {stall_after})
    marker=${{line#*:}}
    if [ "${{line%%:*}}" = "$step" ] && [ ! -e "$marker" ]; then
        : > "$marker"
        n=0
        while [ -f {stall_after} ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
    fi
fi
"""


def stalling_cxx(folder) -> str:
    """A $CXX (written into `folder`): the stand-in compiler, which can also
    stall a step after writing its whole output (`stall_at(..., written=True)`)."""
    from support.scons_helpers import FAKE_CXX
    path = os.path.join(str(folder), "stalling_cxx.sh")
    with open(path, "w") as f:
        f.write(_WRAPPER.format(fake_cxx=FAKE_CXX, stall_after=STALL_AFTER_FILE))
    return f"sh {path}"


def stall_at(folder, step: str, marker: str, written: bool = False) -> str:
    """The stand-in's next `step` in `folder` stalls and creates `marker`:
    its output half-written, or with `written` complete (stalling_cxx())."""
    assert step in ("compile", "link"), step
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, STALL_AFTER_FILE if written else STALL_FILE), "w") as f:
        f.write(f"{step}:{marker}")
    return marker


def unstall(folder) -> None:
    """No step in `folder` stalls any more; a stalled `written` one goes on."""
    for name in (STALL_FILE, STALL_AFTER_FILE):
        try:
            os.unlink(os.path.join(folder, name))
        except FileNotFoundError:
            pass


def wait_for(path, proc, limit: float = 120) -> None:
    """Poll until `path` exists; fails if `proc` ends first or after `limit` s."""
    deadline = time.monotonic() + limit
    while not os.path.exists(path):
        if proc.poll() is not None:
            out = proc.communicate()
            raise AssertionError(f"the build ended (exit {proc.returncode}) before {path} appeared:\n"
                                 f"{str(out[0])[-3000:]}\n{str(out[1])[-3000:]}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def fingerprints(path) -> list[str]:
    """The fingerprint values in a file's bytes (`AGF_FINGERPRINT(v2)` -> "2")."""
    with open(path, "rb") as f:
        data = f.read()
    return sorted({m.decode() for m in re.findall(rb"AGF_FINGERPRINT\(v(\w+)\)", data)})


def leftovers(root) -> list[int]:
    """Live processes (other than this one) whose working folder is `root`
    or below it."""
    root = os.path.realpath(str(root))
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.path.realpath(os.readlink(f"/proc/{entry}/cwd"))
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and (cwd == root or cwd.startswith(root + os.sep)):
            found.append(int(entry))
    return found


def end_leftovers(root, patience_s: float = 10.0) -> list[int]:
    """SIGKILL every process left running under `root`, by pid, until none
    is; returns the pids found."""
    seen: list[int] = []
    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        pids = leftovers(root)
        if not pids:
            break
        for pid in pids:
            seen.append(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    return sorted(set(seen))


def wait_gone(pids, limit: float = 120) -> None:
    """Poll until none of `pids` is alive (or a zombie only)."""
    deadline = time.monotonic() + limit
    while True:
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        alive.append(pid)
            except OSError:
                continue
        if not alive:
            return
        assert time.monotonic() < deadline, f"processes {alive} still running after {limit} s"
        time.sleep(0.05)


def wait_for_waiter(lock_file, proc, limit: float = 120) -> bool:
    """Poll the kernel's lock table (/proc/locks) until some process waits
    for the flock of `lock_file` (a build blocked behind another): True;
    False if `proc` ended first; fails after `limit` s."""
    deadline = time.monotonic() + limit
    try:
        inode = str(os.stat(lock_file).st_ino)
    except FileNotFoundError:   # (no such lock: nothing can wait for it)
        inode = None
    while True:
        with open("/proc/locks") as f:
            for line in f:
                words = line.split()
                if len(words) > 6 and words[1] == "->" and words[2] == "FLOCK" \
                        and words[6].rsplit(":", 1)[-1] == inode:
                    return True
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"nothing waited for {lock_file}, and the process did not end"
        time.sleep(0.02)
