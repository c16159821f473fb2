"""Where pytest puts the session's tmp_path folders (tests/conftest.py calls
in_memory() as it is imported): not a test module.

The tests copy checkouts and build folders thousands of times, and most of
those copies go as their test ends.  On this machine's ext4, which has no
journal, creating a file next to many just deleted costs the kernel a scan
(ext4's recently_deleted): the fast tier spent a third of its time in the
kernel (docs/testing.md, "Temporary folders").  A tmpfs has no such cost."""

from __future__ import annotations

import os

SHM = "/dev/shm"
SHM_ROOM = 16 << 30   # free in the tmpfs, and memory available, for the basetemp to go there


def tmpfs_with_room(folder: str, room: int) -> bool:
    """`folder` is a tmpfs mount point made as /tmp is (root's, sticky,
    everyone's to write), with `room` bytes free and as much memory available."""
    try:
        with open("/proc/self/mounts") as f:
            mounts = {fields[1]: fields[2] for fields in (line.split() for line in f) if len(fields) > 2}
        with open("/proc/meminfo") as f:
            available = next(int(line.split()[1]) << 10 for line in f if line.startswith("MemAvailable:"))
        st, vfs = os.lstat(folder), os.statvfs(folder)
    except (OSError, StopIteration):
        return False
    shared = st.st_uid == 0 and st.st_mode & 0o1777 == 0o1777
    return mounts.get(folder) == "tmpfs" and shared and vfs.f_bavail * vfs.f_frsize >= room and available >= room


def in_memory() -> None:
    """pytest's temporary root (the documented PYTEST_DEBUG_TEMPROOT) on
    /dev/shm where it has room; a root set already, or --basetemp, wins.
    pytest makes its pytest-of-<user> there as in /tmp (0700, checked to be
    ours); setup.cfg's tmp_path_retention_policy = failed frees a passed
    test's folder as it ends, and the session's after a green run, so that
    the memory goes back.  Decided by the process that starts pytest-xdist's
    workers: they get their basetemp from it."""
    if os.environ.get("PYTEST_DEBUG_TEMPROOT") or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if tmpfs_with_room(SHM, SHM_ROOM):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = SHM
