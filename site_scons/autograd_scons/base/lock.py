"""The project's OS-level locks (`fcntl.flock`: the kernel drops one when
its holder dies, however it dies, so a killed build never leaves a stale
lock), in two shapes:

`lock_folder(out)`: an exclusive lock on a generated folder
(`<out>/.autograd_lock`), held until the process exits, so that two builds
never interleave.  Nothing is ever written to the file (it is not output); a
waiting build names the holder from the kernel's lock table, where it has
one.

`BuildLock(folder)`: one lock per build folder for every build started from
Python (`load()`, the editable install's rebuild on import), held for a
`with` block:

    from autograd_scons.base.lock import BuildLock, LockTimeout
    with BuildLock(folder, timeout=None, label="load(myops)") as lock:
        ...                      # up-to-date check, generate, compile, link
        lock.set_group(pgid, top)   # the build's process group and folder (the runner does it)

`fcntl.flock` on `<folder>/.folder_lock`: the kernel drops it when its
holder dies, however it dies (SIGKILL, the OOM killer, a cancelled job), so
a killed build never blocks the next one.  The file holds one line naming
the holder (`pid=<pid> group=<process group of its build>`), for the
waiter's message and the timeout error, then the folder the build runs in
(a project's SConstruct runs in the project, above its build folder); the
holder empties it on release, so a record found by the next holder means
the last one died while building: its build's processes (compilers or a
linker it left orphaned: that process group's members running in the lock's
folder or the build's) are killed before anything is rebuilt, so no stale
compile or link can overwrite a new object or library.

While another process holds the lock, `say` (default: stderr) gets one line
naming it, then the wait polls until `timeout` seconds (None: the variable
AUTOGRAD_BUILD_TIMEOUT, else no limit), past which LockTimeout names the
folder and the holder's pid.  A folder that cannot be made or written raises
FolderError with one line.  The lock is not reentrant: one `with` per
process and folder at a time.
"""

from __future__ import annotations

import fcntl
import os
import signal
import sys
import time
from typing import Callable, Optional

from .errors import Error

# The lock's file in an output folder (codegen/tree.py lists it with the
# folder's other names; it is defined here, below every layer that locks).
LOCK = ".autograd_lock"

_held: dict[str, int] = {}   # folder -> fd, for the life of the process


def lock_folder(out_dir: str, wait: bool = True,
                say: Optional[Callable[[str], None]] = None) -> bool:
    """Hold the folder's lock until the process exits; True if the folder
    was made for it.  If another process holds it: say so and wait, or
    (wait=False) raise BlockingIOError with a message naming it."""
    out_dir = os.path.abspath(out_dir)
    if out_dir in _held:
        return False
    made = not os.path.isdir(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, LOCK)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = _holder(os.fstat(fd).st_ino)
            message = f"{out_dir} is being built by another process{other}"
            if not wait:
                raise BlockingIOError(f"{message}; try again when it has finished") from None
            if say:
                say(f"{message}: waiting for it to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    _held[out_dir] = fd
    return made


def remove_made_folder(out_dir: str) -> None:
    """After a failed first update: the folder `lock_folder` made holds
    nothing but the lock, and bad input must leave nothing behind."""
    out_dir = os.path.abspath(out_dir)
    try:
        if os.listdir(out_dir) == [LOCK]:
            os.unlink(os.path.join(out_dir, LOCK))
            os.rmdir(out_dir)
            os.close(_held.pop(out_dir))
    except (OSError, KeyError):
        pass


def _holder(inode: int) -> str:
    """' (pid N)' of the process holding a flock on `inode`, from Linux's
    /proc/locks (`1: FLOCK ADVISORY WRITE <pid> <maj>:<min>:<inode> 0 EOF`)."""
    try:
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    for line in lines:
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK" and parts[5].rsplit(":", 1)[-1] == str(inode):
            return f" (pid {parts[4]})"
    return ""


# --- BuildLock: a build folder's lock, for builds started from Python ---------

LOCK_NAME = ".folder_lock"
TIMEOUT_VARIABLE = "AUTOGRAD_BUILD_TIMEOUT"
_POLL_S = 0.05


class FolderError(Error, OSError):
    """The build folder cannot be made or written, or is not ours (one line)."""

    def __str__(self) -> str:  # the line itself, not OSError's "[Errno N] " before it
        return str(self.strerror)


class LockTimeout(Error, TimeoutError):
    def __init__(self, folder: str, pid: Optional[int], waited: float):
        self.folder, self.pid, self.waited = folder, pid, waited
        who = f"pid {pid}" if pid else "another process"
        super().__init__(f"{folder}: still being built by {who} after waiting {waited:g} s "
                         f"(timeout=, or ${TIMEOUT_VARIABLE}); if that process is stuck, end it")


def _default_timeout() -> Optional[float]:
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"${TIMEOUT_VARIABLE}={text!r}: not a number of seconds") from None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class BuildLock:
    def __init__(self, folder: str, timeout: Optional[float] = None, label: str = "build",
                 say: Callable[[str], None] = _stderr):
        self.folder = os.path.abspath(folder)
        self.path = os.path.join(self.folder, LOCK_NAME)
        self.timeout = _default_timeout() if timeout is None else timeout
        self.label, self.say = label, say
        self.fd: Optional[int] = None
        self.waited_for: Optional[int] = None  # the holder's pid when we had to wait

    def __enter__(self) -> "BuildLock":
        try:
            os.makedirs(self.folder, exist_ok=True)
            # Not through a link planted in its place; the holder's pid is nobody else's business.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise FolderError(e.errno, f"{self.label}: cannot write the build folder {self.folder}: "
                              f"{e.strerror} (build_directory=, or $AUTOGRAD_EXTENSIONS_DIR)") from None
        try:
            self._acquire(fd)
            left = self._record(fd)
            if left:
                _reap(left.get("group"), {self.folder, left.get("top") or self.folder})
            self._write(fd, f"pid={os.getpid()}")
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def _acquire(self, fd: int) -> None:
        start = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            waited = time.monotonic() - start
            if self.waited_for is None:
                time.sleep(_POLL_S)  # the holder writes its line right after locking
                self.waited_for = self._record(fd).get("pid") or 0
                self.say(f"{self.label}: waiting for pid {self.waited_for or '?'}, "
                         f"which is building {self.folder}")
                continue
            if self.timeout is not None and waited >= self.timeout:
                raise LockTimeout(self.folder, self._record(fd).get("pid") or self.waited_for, self.timeout)
            time.sleep(_POLL_S)

    @staticmethod
    def _record(fd: int) -> dict:
        try:
            data = os.pread(fd, 8192, 0)
        except OSError:
            return {}
        first, _, rest = data.partition(b"\n")
        out: dict = {}
        for word in first.decode("ascii", "replace").split():
            key, _, value = word.partition("=")
            if value.isdigit():
                out[key] = int(value)
        top = os.fsdecode(rest.rstrip(b"\n"))
        if out and os.path.isabs(top):
            out["top"] = top
        return out

    @staticmethod
    def _write(fd: int, line: str) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, os.fsencode(line + "\n") if line else b"", 0)

    def set_group(self, group: int, top: Optional[str] = None) -> None:
        """Record the build's process group and the folder it runs in
        (default: the lock's): its members there are killed by the next
        holder if this process dies before releasing the lock."""
        top = os.path.abspath(top or self.folder)
        if self.fd is None:
            raise ValueError("set_group() on a BuildLock that is not held")
        self._write(self.fd, f"pid={os.getpid()} group={group}\n" + top)

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            try:
                self._write(self.fd, "")
            finally:
                os.close(self.fd)  # closing drops the flock
                self.fd = None


def _members(group: int, folders: set) -> list[int]:
    """Live processes of `group` running in one of `folders` (SCons runs its
    commands in its top folder): only a dead build's own leftovers, even if
    the kernel has since reused the group's id."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            if int(stat[stat.rindex(")") + 2:].split()[2]) != group:
                continue
            if os.path.realpath(os.readlink(f"/proc/{entry}/cwd")) in folders:
                found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _reap(group: Optional[int], folders: set, patience_s: float = 10.0) -> None:
    """Kill what a dead holder's build left running in `folders` (compilers
    still writing objects, a linker still writing the library), and wait
    until it is gone."""
    if not group or not os.path.isdir("/proc"):
        return
    folders = {os.path.realpath(f) for f in folders}
    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        pids = _members(group, folders)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(_POLL_S)
