"""The errors users see: `Error`, the base of every error this project
raises for a person to read (exported as `autograd_scons.Error`), and
`SpecError`, a problem in an input file, located.  Each error is one line
(`str()`): what is wrong, where, and what to do.

Every other such class (the build folder's `FolderError` and
`LockTimeout`, a failed build's `BuildError`, load()'s `LoadError`, the
wheels' errors, ...) derives from `Error` too, and keeps the standard base
it had (OSError, RuntimeError, ValueError...), so that code catching those
still catches it.  This module imports nothing of the project: any layer,
the generator included, may import it.
"""

from __future__ import annotations

import errno
import functools
from typing import Callable, Optional, TypeVar


class Error(Exception):
    """Any error of autograd_scons a user is meant to read: one line."""


class FormulaError(Error):
    """A user's text is wrong where it stands (a formula, the type a schema
    gives an argument), found by a helper that does not know where that text
    is: the caller that does re-raises it as a located SpecError.  Only this
    class is located so: a ValueError from a bug in the generator keeps its
    traceback instead of being reported as the user's mistake."""


class OptionError(Error, ValueError):
    """An option given to the generator has a value it does not take
    (`unity=`, `pch=`, `python=`, `namespace=`, ...).  A ValueError too, as
    Python's convention for a bad argument; callers that turn it into their
    own one line catch this class, not every ValueError."""


class SpecError(Error):
    """Bad input, reported as one line: `FILE:LINE: entry 'NAME': what is wrong`."""

    def __init__(self, message: str, file: Optional[str] = None,
                 line: Optional[int] = None, entry: Optional[str] = None):
        self.message = " ".join(clipped(word) for word in str(message).split())  # one line, no endless name
        self.file, self.line = file, line
        self.entry = clipped(entry, 200) if isinstance(entry, str) else entry   # (a schema: longer than a name)
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        entry = f" entry '{self.entry}':" if self.entry else ""
        return f"{where}:{entry} {self.message}"


def clipped(text: str, longest: int = 80) -> str:
    """`text` as an error echoes it: a name or schema of more than `longest`
    characters (a 10,000-character name pasted by mistake) is cut there,
    with "..." (a path, which a reader needs whole, is kept)."""
    if len(text) <= longest + 20 or "/" in text:
        return text
    return text[:longest] + "..."


# What to do about the environment failures a build meets (errno name -> hint).
_OS_HINTS = {
    "ENOSPC": "free some space and build again",
    "EDQUOT": "free some space and build again",
    "EACCES": "make the folder writable, or build into another one (BUILD=...)",
    "EPERM": "make the folder writable, or build into another one (BUILD=...)",
    "EROFS": "the file system is read-only: build into another folder (BUILD=...)",
    "ENAMETOOLONG": "shorten the name or the build folder's path",
}


def os_error_line(e: OSError) -> str:
    """An OSError met while writing outputs, as one line with what to do."""
    name = errno.errorcode.get(e.errno or 0, "")
    where = e.filename if e.filename is not None else ""
    hint = _OS_HINTS.get(name, "")
    text = f"{where}: {e.strerror or e}" if where else f"{e.strerror or e}"
    return text + (f" ({hint}; what was generated before is kept)" if hint else "")


_F = TypeVar("_F", bound=Callable)


def one_line_errors(fn: _F) -> _F:
    """fn, whose own errors (an `Error`: one located line, the log's path)
    reach the caller without the tool's frames or the exception they were
    raised while handling: what went wrong is in the line, and the frames
    would only bury it.  Any other exception (a bug) keeps its traceback."""
    @functools.wraps(fn)
    def entry(*args, **kwargs):
        try:
            return fn(*args, **kwargs)  # (Python 3.10 shows this line alone: the error is the last line)
        except Error as e:
            # A bare `raise` adds no frame.  Python >= 3.11 re-raises with
            # the exception's own traceback (none: the caller's frame is the
            # first); 3.10 with the one it caught, whose first entry is this
            # frame: cut after it.
            if e.__traceback__ is not None:
                e.__traceback__.tb_next = None
            e.__traceback__, e.__cause__, e.__suppress_context__ = None, None, True
            raise
    return entry  # type: ignore[return-value]
