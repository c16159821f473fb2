"""No target outlives a build that never finished unless its database vouches
for it.

SCons saves its signature database once, after the build.  A build killed
before that (SIGKILL, a killed parent, a timeout, a power cut) leaves on disk
targets built from inputs the database has no record of: undo the edit and
the old record matches the sources again, so SCons keeps the abandoned edit's
object and links it.

`begin(db_path, folder)`, called by every build's environment once its
database is chosen and before any target is built:

- when the mark `<db>.unfinished` is there, the last build of this database
  stopped before saving it: every target the database records under `folder`
  whose bytes no longer have the content signature recorded with it is
  removed, and SCons rebuilds it.  That costs one read of each recorded target
  (docs/failures.md), and only after a build that did not finish;
- then it writes the mark, and removes it as soon as SCons has saved the
  database, after a build with no failure.  A build that failed or was
  interrupted (Ctrl-C inside SCons) keeps the mark: its last step's file may
  be newer than its record.
"""

from __future__ import annotations

import os
import pickle
import stat

DATABASE = ".sconsign"  # the database's name in its build folder (SCons adds .dblite)
MARK_SUFFIX = ".unfinished"
_pending: list = []  # marks to remove once SCons has saved its database


def _records(db_file: str):
    """(directory key, file name, entry) of every entry of an SCons dblite."""
    import SCons.dblite
    try:
        db = SCons.dblite.open(db_file, "r")
    except Exception:  # noqa: BLE001 (a damaged database vouches for nothing: its targets go)
        return
    for key in list(db.keys()):
        try:
            entries = pickle.loads(db[key])
        except Exception:  # noqa: BLE001 (an unreadable record vouches for nothing)
            continue
        for name, entry in entries.items():
            yield key, name, entry


def _vouched(path: str, entry) -> bool:
    """The file still has the content signature its record was saved with."""
    import SCons.Util
    csig = getattr(getattr(entry, "ninfo", None), "csig", None)
    if not csig:
        return False
    try:
        return SCons.Util.hash_file_signature(path) == csig
    except OSError:
        return False


def recover(db_path: str, top: str, folder: str) -> list[str]:
    """Remove the targets under `folder` that the database at `db_path`
    (keys relative to `top`) cannot vouch for; returns their paths."""
    folder = os.path.abspath(folder) + os.sep
    removed = []
    db_file = db_path + ".dblite"
    if os.path.isfile(db_file):
        for key, name, entry in _records(db_file):
            if getattr(getattr(entry, "binfo", None), "bactsig", None) is None:
                continue  # a source, not something a build wrote
            path = os.path.normpath(os.path.join(top, key, name))
            if not path.startswith(folder):
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                continue
            if stat.S_ISREG(st.st_mode) and _vouched(path, entry):
                continue
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed


def _saved(write, db_path):
    def write_then_unmark(*args, **kwargs):
        try:
            result = write(*args, **kwargs)
        except BaseException:
            # dblite writes `<db>.tmp`, then renames it: a failed write (a
            # full disk) leaves it, and would again when the database is
            # collected at exit.  The mark stays, for the next build.
            import gc

            import SCons.dblite
            import SCons.SConsign
            for db in list(SCons.SConsign.DB_sync_list) + [o for o in gc.get_objects()
                                                          if isinstance(o, SCons.dblite._Dblite)]:
                if hasattr(db, "_needs_sync"):
                    db._needs_sync = False
            try:
                os.unlink(db_path + ".tmp")
            except OSError:
                pass
            raise
        import SCons.Script
        # A failed or interrupted build saves its database too, but the step
        # it was in keeps its old record while its file may hold the new
        # output (a link or launcher that finished writing before Ctrl-C):
        # the mark stays, and the next build checks every target.
        if not SCons.Script.GetBuildFailures():
            while _pending:
                try:
                    os.unlink(_pending.pop())
                except OSError:
                    pass
        return result
    write_then_unmark.autograd_unmarks = True
    return write_then_unmark


def _snapshot(folder: str, mark: str) -> dict:
    """Every file and folder under `folder` with its stat (a file written
    in place moves its own, one made, renamed or removed its folder's)."""
    seen = {}
    for parent, dirs, files in os.walk(folder):
        for name in [os.curdir] + files:
            path = os.path.join(parent, name)
            if path != mark:
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                seen[path] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return seen


def _unmark_if_nothing_built(folder: str, mark: str, before: dict) -> None:
    """At exit, when SCons never saved its database (an error while reading
    the SConscripts, `-h`): the mark goes if the build changed nothing."""
    if mark in _pending and _snapshot(folder, mark) == before:
        _pending.remove(mark)
        try:
            os.unlink(mark)
        except OSError:
            pass


def distrust(db_path: str) -> None:
    """Have the next build of this database check every target it records
    (what a build that never finished gets): for a caller that found an
    output that is not what the last build made."""
    fd = os.open(db_path + MARK_SUFFIX, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.close(fd)


def begin(db_path: str, top: str, folder: str, say=print) -> None:
    """Under the build folder's lock (held until exit: two builds of one
    folder never interleave), recover from an unfinished build of this
    database, then mark this one as unfinished until SCons has saved it."""
    import SCons.SConsign

    from autograd_scons.base.lock import lock_folder
    # Another build of this folder may be running (its mark is not a dead
    # build's): wait for it, holding the folder until this process exits.
    lock_folder(folder, say=lambda m: say(f"scons: {m}"))
    mark = db_path + MARK_SUFFIX
    if os.path.lexists(mark):
        removed = recover(db_path, top, folder)
        say(f"scons: the last build of {folder} did not finish: "
            f"{len(removed)} target(s) it may have left were removed")
    fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fsync(fd)  # on disk before any target is written
    finally:
        os.close(fd)
    _pending.append(mark)
    import atexit
    atexit.register(_unmark_if_nothing_built, folder, mark, _snapshot(folder, mark))
    if not getattr(SCons.SConsign.write, "autograd_unmarks", False):
        SCons.SConsign.write = _saved(SCons.SConsign.write, db_path)
