"""The files of the compile layout (buckets.py): buckets and edit TUs.

A bucket holds its members' text itself, not `#include`s of their files:
when an edited Function is shadowed (its old text left in its bucket and
overridden at link), its new `.cpp` must not make the bucket's TU change, or
SCons would recompile it.  `#line` keeps diagnostics pointing at the per-unit
file, and quoted includes are respelled relative to the bucket.  The edit
TUs, whose point is to recompile with their members, `#include` them.
"""

from __future__ import annotations

import posixpath
import re
from typing import Callable, Iterable, Sequence

from .buckets import Layout, slot_of
from ..templates import load
from ..tree import BANNER, SUPPORT_CPP as SUPPORT, UNITY, TranslationUnit, TUKind, bucket_file, edit_file, include
from .units import Unit

_BUCKET = load("unity_bucket.cpp")
_EDIT = load("unity_edit.cpp")
_QUOTED_INCLUDE = re.compile(r'^(\s*#\s*include\s+)"([^"]+)"', re.M)


def _from_unity(source: str, path: str) -> str:
    """`path`, included by `source` (relative to the output folder), as a
    bucket in UNITY/ must spell it."""
    target = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
    return posixpath.relpath(target, UNITY)


def included(source: str, text: str) -> set[str]:
    """The files `source`'s text includes with quotes, relative to the output folder."""
    return {posixpath.normpath(posixpath.join(posixpath.dirname(source), m.group(2)))
            for m in _QUOTED_INCLUDE.finditer(text)}


def included_by_members(bucket_text: str) -> dict[str, set[str]]:
    """{member source: what its text in this bucket file includes}, both
    relative to the output folder: what a shadowed unit's old text needs."""
    out = {}
    for chunk in bucket_text.split('\n#line 1 "')[1:]:
        path, _, body = chunk.partition('"\n')
        source = posixpath.normpath(posixpath.join(UNITY, path))
        out[source] = included(bucket_file(0), body)   # respelled relative to unity/
    return out


def inline(unit: Unit, text: str) -> str:
    """A unit's `.cpp` text as it stands in a bucket."""
    body = _QUOTED_INCLUDE.sub(lambda m: f'{m.group(1)}"{_from_unity(unit.source, m.group(2))}"', text)
    return f'#line 1 "{posixpath.relpath(unit.source, UNITY)}"\n{body}'


def render_buckets(units: Sequence[Unit], layout: Layout, which: Iterable[int],
                   text_of: Callable[[Unit], str]) -> dict[str, str]:
    """The files of buckets `which`, with the current text of their members
    (`text_of(unit)`: its `.cpp`).  Empty buckets are written too, so that
    the file set depends on the count only."""
    which = set(which)
    members: dict[int, list[Unit]] = {i: [] for i in which}
    for u in units:
        b = layout.place(u.name)
        if b in which:
            members[b].append(u)
    files = {}
    for i, ms in members.items():
        ms.sort(key=lambda u: u.source)
        # once per library (emit/functions/support.py)
        support = [f'#include "{include(bucket_file(i), SUPPORT)}"', ""] if i == 0 else []
        head = _BUCKET.substitute(banner=BANNER, i=str(i), n=str(layout.buckets), count=str(len(ms)),
                                  support=support)
        # The members follow the head's last line, each on a line of its own.
        files[bucket_file(i)] = head[:-1] + "".join("\n" + inline(u, text_of(u)) for u in ms)
    return files


def render_edit_tus(units: Sequence[Unit], layout: Layout) -> dict[str, str]:
    """The edit TUs that have members."""
    slots: dict[int, list[Unit]] = {}
    for u in units:
        if layout.buckets and u.name in layout.alone:
            slots.setdefault(slot_of(u.name, layout.slots), []).append(u)
    files = {}
    for j, ms in sorted(slots.items()):
        ms.sort(key=lambda u: u.source)
        files[edit_file(j)] = _EDIT.substitute(
            banner=BANNER, j=str(j), count=str(len(ms)),
            members=[f'#include "{include(edit_file(j), u.source)}"' for u in ms])
    return files


def translation_units(units: Sequence[Unit], layout: Layout) -> list[TranslationUnit]:
    """What to compile, relative to the output folder, in link order: the
    edit TUs first (where a shadowed unit is defined twice, the linker
    takes the first definition), then the buckets; with unity=0, every
    unit's own TU in emission order, then the support TU (emit/functions/support.py)."""
    if layout.buckets == 0:
        return [TranslationUnit(u.source, TUKind.UNIT) for u in units] + \
            [TranslationUnit(SUPPORT, TUKind.SUPPORT)]
    slots = sorted({slot_of(u.name, layout.slots) for u in units if u.name in layout.alone})
    return [TranslationUnit(edit_file(j), TUKind.EDIT) for j in slots] + \
        [TranslationUnit(bucket_file(i), TUKind.BUCKET) for i in range(layout.buckets)]
