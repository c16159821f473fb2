"""The files a build started from Python hands over: read, written only
when they change, and a finished link published under its final name.

    publish(os.path.join(folder, "obj", "x.so"), os.path.join(folder, "x.so"))

Each is opened by name in a folder of ours, never through a link (see
private_folder.py), and replaced by a rename: a process loading the
published file sees the old bytes or the new ones, never half of them.
"""

from __future__ import annotations

import os

from autograd_scons.codegen.engine.writer import write_atomic


def read_own(path: str):
    """The bytes of a file of ours (never through a link), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def write_if_changed(path: str, text: str) -> None:
    data = text.encode("utf-8")
    if read_own(path) != data:
        write_atomic(path, data, 0o600)


def publish(linked: str, library: str) -> None:
    """A copy of the finished link, renamed into place: a process loading
    `library` sees the old file or the new one, never a half-written one,
    and a later link writing obj/ in place never changes the published file
    (a hard link would share its bytes).  A link that never finished left
    no `linked`: the SConstruct's database vouches for what is there
    (unfinished_build)."""
    data = read_own(linked)
    if data is None:
        raise FileNotFoundError(2, "the link left no library", linked)
    if read_own(library) != data:
        write_atomic(library, data, 0o700)
