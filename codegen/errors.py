"""The one error type users see: a problem in an input file, located."""

from __future__ import annotations

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
