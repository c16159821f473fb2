"""The one error type users see: a problem in an input file, located."""

from __future__ import annotations

import errno
from typing import Optional


class SpecError(Exception):
    """Bad input, reported as one line: `FILE:LINE: entry 'NAME': what is wrong`."""

    def __init__(self, message: str, file: Optional[str] = None,
                 line: Optional[int] = None, entry: Optional[str] = None):
        self.message = " ".join(str(message).split())  # keep it on one line
        self.file, self.line, self.entry = file, line, entry
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        entry = f" entry '{self.entry}':" if self.entry else ""
        return f"{where}:{entry} {self.message}"


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
