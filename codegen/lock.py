"""An exclusive lock on an output folder, so that two builds never interleave.

`fcntl.flock` on `<out>/.autograd_lock`: the kernel drops it when the
process exits, however it exits, so a killed build never leaves a stale
lock.  Nothing is ever written to the file (it is not output); a waiting
build names the holder from the kernel's lock table, where it has one.
"""

from __future__ import annotations

import fcntl
import os
from typing import Callable, Optional

from .tree import LOCK
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
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
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
