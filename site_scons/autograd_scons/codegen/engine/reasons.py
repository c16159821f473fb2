"""Why an update (re)renders or removes a unit.

The engine decides by the reason, never by its wording: which reasons mean
the unit is being edited (its specs changed: it compiles out of its bucket,
buckets.py) is a property of the reason.  The sentence is what the English
report says; the code, what the JSON build report says (one vocabulary).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional


class Reason(enum.Enum):
    NEW = "new"
    RENAMED = "renamed from"                  # with the old name (Why.was)
    NO_MANIFEST = "no trusted manifest"
    DIRTY = "output missing or modified on disk"
    GENERATOR = "generator changed"
    OPTIONS = "options changed"
    ENTRY = "derivatives entry changed"
    NATIVE = "native function changed"
    DERIVED = "derived info changed"          # e.g. tags, or a foreach/view_copy source
    REMOVED = "no longer in the specs"

    @property
    def sentence(self) -> str:
        return self.value

    @property
    def code(self) -> str:
        """Its name in the build report's data (build_report/json_schema.py): stable, where the sentence may be reworded."""
        return self.name.lower()

    @property
    def is_edit(self) -> bool:
        """Whether the unit's own specs changed (or it is new): it is being edited."""
        return self in _EDITS


_EDITS = frozenset({Reason.NEW, Reason.RENAMED, Reason.ENTRY, Reason.NATIVE, Reason.DERIVED})


@dataclass(frozen=True)
class Why:
    reason: Reason
    was: Optional[str] = None   # RENAMED: the unit's old name

    @property
    def sentence(self) -> str:
        return f"{self.reason.sentence} {self.was}" if self.was else self.reason.sentence

    def __str__(self) -> str:
        return self.sentence
