"""A build folder that is ours, or none: what `load()` checks before it
builds or loads anything.

    from autograd_scons.base.private_folder import ensure
    ensure(folder, root, label="load(myops)")   # FolderError: one line

Another user of the machine must not be able to put a library, an object or
a link where `load()` will use it (torch.utils.cpp_extension's shared
/tmp/torch_extensions was that hole).  So, as OpenSSH does for a key's
folder:

- `root` (the `$AUTOGRAD_EXTENSIONS_DIR` folder, or `folder` itself when the
  caller chose it: `build_directory=`) and every folder from it down to
  `folder` must be owned by this user and writable by nobody else; the
  folders below `root` must be real folders, not links;
- missing folders are made 0700, whatever the umask;
- `folder` may hold no link at all in its own entries (the log, the lock, the
  stamp, the library, gen/, obj/ ... are opened by name).

Anything else raises FolderError naming the folder and the fix.
"""

from __future__ import annotations

import os
import stat

from autograd_scons.base.lock import FolderError


def _refuse(label: str, path: str, why: str, fix: str) -> FolderError:
    return FolderError(1, f"{label}: {path} {why}: refusing to build or load there ({fix})")


def _check(label: str, path: str, st: os.stat_result) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(label, path, "is not a folder", "remove it, or choose another build folder")
    if st.st_uid != os.geteuid():
        raise _refuse(label, path, f"is owned by uid {st.st_uid}, not by you (uid {os.geteuid()})",
                      "another user could put a library there: choose another build folder "
                      "(build_directory=, or $AUTOGRAD_EXTENSIONS_DIR)")
    if st.st_mode & 0o022:
        raise _refuse(label, path, f"is writable by its group or by others (mode {stat.S_IMODE(st.st_mode):o})",
                      f"chmod go-w {path}")


def _make(label: str, path: str) -> None:
    try:
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # (mkdir's mode passes through the umask)
    except FileExistsError:
        pass
    except OSError as e:
        raise FolderError(e.errno, f"{label}: cannot write the build folder {path}: {e.strerror} "
                                   "(build_directory=, or $AUTOGRAD_EXTENSIONS_DIR)") from None


def ensure(folder: str, root: str, label: str = "build") -> None:
    """Make `folder` (below `root`) as needed, and check that it is ours."""
    folder, root = os.path.abspath(folder), os.path.abspath(root)
    if not os.path.isdir(root):
        missing = []
        path = root
        while not os.path.lexists(path):
            missing.append(path)
            path = os.path.dirname(path)
        for path in reversed(missing):
            _make(label, path)
    try:
        _check(label, root, os.stat(root))  # (the root itself may be a link to a folder of ours)
        rel = os.path.relpath(folder, root)
        path = root
        for part in ([] if rel == os.curdir else rel.split(os.sep)):
            path = os.path.join(path, part)
            if not os.path.lexists(path):
                _make(label, path)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                raise _refuse(label, path, "is a symbolic link", "remove it")
            _check(label, path, st)
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_symlink():
                    raise _refuse(label, entry.path, "is a symbolic link", "remove it")
    except FileNotFoundError as e:  # removed meanwhile
        raise FolderError(e.errno, f"{label}: {e.filename}: {e.strerror}") from None
    except PermissionError as e:
        raise FolderError(e.errno, f"{label}: cannot read {e.filename}: {e.strerror}") from None
