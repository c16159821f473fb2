"""The compile layout: which translation units the generated code is built as.

Generation stays per unit; compilation goes by bucket.  Every TU pays the
same parse of torch's headers, while a unit's own code costs a small
fraction of one (docs/compile-layout.md has the measurements), so units are
compiled through unity buckets (`unity/bucket_<i>.cpp`, which hold
their members' text).  A unit's bucket depends on its name only, so adding
or removing a unit changes one bucket.

Units being edited compile out of their buckets, in the edit TUs
(`unity/edited_<j>.cpp`, at most one per job), as Unreal Build Tool's
adaptive unity build does for the files being worked on.  Where the old
definitions can be made weak in a copy of the bucket's object (`override`:
ELF objects, nm and objcopy; tool/weaken.py), an edited unit whose header did
not change leaves its old text in its bucket, *shadowed*:
the bucket is not recompiled at all, and the edit costs its edit TU only
(an op kernel registers through one overridable function, run once:
emit/op_kernels/registration.py).  Otherwise (a changed header, which the rest of the
bucket was compiled against; a removal) its bucket is rewritten and
recompiled once.  A unit goes back into its bucket only when that bucket is
rewritten anyway.

The bucket count, when not pinned, is chosen once, on a build without a
trusted layout, and then kept, so that changing `-j` never reshuffles:
`max(min(cores, ceil(n / MIN_PER_BUCKET)), ceil(n / MAX_PER_BUCKET))`, where
`cores` is `jobs` less the other TUs compiled alongside the buckets (the
Python binding TUs, the caller's own sources), at least 1: those keep the
other cores busy, and a bucket more would only pay the prelude again (the
example, 29 units with 2 other TUs on 2 cores, gets 1 bucket).  The edit TUs number `jobs` (at most
MAX_SLOTS), also kept.

`prelude_pays` is the layout's say on the precompiled prelude: under load()'s
default (`pch="auto"`) a cold build's TUs take it only when enough of them
would (the edit TUs take it all the same: the first edit precompiles it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from autograd_scons.base.errors import OptionError
from ..tree import BUCKET_SEED, SLOT_SEED, placed

# Buckets smaller than this are not worth a TU of their own: the headers
# cost tens of units' worth of code.
MIN_PER_BUCKET = 8
# Buckets larger than this make a changed header, an added or a removed unit
# slow: each recompiles one bucket, beside its binding TU and edit TU, which
# a header edit or an addition pays anyway; 96 keeps the bucket's cost under
# theirs, and every bucket fewer saves a cold build the prelude's load and
# the instantiations each TU repeats (docs/benchmarks-cold.md measures both).
MAX_PER_BUCKET = 96
# Units out of their buckets at most: past this, edited units go back into
# their (rewritten) buckets, as a mass edit is cheaper compiled that way.
MAX_ALONE = 48
MAX_SLOTS = 8
# The precompiled prelude pays on a cold build from this many TUs taking it:
# the precompile is serial (every TU waits for it) and each TU taking it
# saves part of a parse of the prelude; the ratio of the two, measured in
# docs/load.md ("The precompiled prelude's rule, measured"), rounds up to 5.
PCH_MIN_TUS = 5
# clang's precompile keeps the prelude's template instantiations
# (-fpch-instantiate-templates): it costs about 1.8 parses and saves each TU
# nearly a whole one, so it pays from 2 (docs/compile-layout.md).
PCH_MIN_TUS_CLANG = 2

AUTO = "auto"


def bucket_count(n_units: int, jobs: int, others: int = 0) -> int:
    """The automatic bucket count for `n_units` units and `jobs` parallel
    compiles, `others` of which go to TUs outside the buckets."""
    if n_units == 0:
        return 1
    return max(min(max(jobs - max(others, 0), 1), math.ceil(n_units / MIN_PER_BUCKET)),
               math.ceil(n_units / MAX_PER_BUCKET))


def prelude_pays(tus_taking_it: int, family: str = "gcc") -> bool:
    """Whether precompiling the prelude pays for a cold build whose
    `tus_taking_it` TUs would take it: the buckets (or units' own TUs), the
    binding TUs and the caller's sources compiled with it, never the edit
    TUs (they come and go with edits: counting them would switch the prelude,
    and recompile everything, in the middle of an edit loop; the tool gives
    them the prelude regardless).  The rule of `pch="auto"` (request.Pch)
    for a cold build's TUs.  `family`: "gcc" or "clang" (tool/pch_compilers.py)."""
    return tus_taking_it >= (PCH_MIN_TUS_CLANG if family == "clang" else PCH_MIN_TUS)


def bucket_of(name: str, n: int) -> int:
    """A unit's bucket: depends on its name only."""
    return placed(name, BUCKET_SEED, n)


def slot_of(name: str, n: int) -> int:
    """A unit's edit TU while it is out of its bucket (another hash, so
    that one bucket's units spread over the slots)."""
    return placed(name, SLOT_SEED, n)


def parse_unity(value: Any) -> Optional[int]:
    """`unity=` as the user gives it: 'auto' (None), or a count (0: one TU
    per unit).  Raises OptionError with the reason."""
    if value is None or value == AUTO:
        return None
    if isinstance(value, bool):
        raise OptionError(f"unity must be 'auto' or a non-negative integer, not {value!r}")
    try:
        n = int(str(value).strip())
    except ValueError:
        raise OptionError(f"unity must be 'auto' or a non-negative integer, not {value!r}") from None
    if n < 0:
        raise OptionError(f"unity must be 'auto' or a non-negative integer, not {value!r}")
    return n


@dataclass(frozen=True)
class Layout:
    request: Optional[int]         # what was asked: None for auto, or a pinned count
    buckets: int                   # 0: one TU per unit
    alone: tuple[str, ...] = ()    # units out of their bucket, compiled in the edit TUs (sorted)
    shadowed: tuple[str, ...] = ()  # those of them whose old text is still in their bucket (sorted)
    slots: int = 1                 # edit TUs

    def to_json(self) -> dict:
        return {"request": self.request, "buckets": self.buckets, "alone": list(self.alone),
                "shadowed": list(self.shadowed), "slots": self.slots}

    @classmethod
    def from_json(cls, d: Any) -> "Layout":
        names = ("alone", "shadowed")
        if not (isinstance(d, dict) and isinstance(d.get("buckets"), int) and d["buckets"] >= 0
                and (d.get("request") is None or isinstance(d["request"], int))
                and isinstance(d.get("slots"), int) and 1 <= d["slots"] <= MAX_SLOTS
                and all(isinstance(d.get(k), list) and all(isinstance(a, str) for a in d[k]) for k in names)
                and set(d["shadowed"]) <= set(d["alone"])):
            raise OptionError("bad layout section")
        return cls(d["request"], d["buckets"], tuple(d["alone"]), tuple(d["shadowed"]), d["slots"])

    def place(self, name: str) -> Optional[int]:
        """The bucket `name` compiles in, or None when it compiles out of one."""
        if self.buckets == 0 or name in self.alone:
            return None
        return bucket_of(name, self.buckets)

    def shadowing(self) -> set[int]:
        """The buckets holding a shadowed unit's old text (weakened at link: tool/weaken.py)."""
        return {bucket_of(s, self.buckets) for s in self.shadowed}

    def in_text(self, name: str) -> bool:
        """Whether `name`'s text (current, or shadowed) is in its bucket's file."""
        return self.buckets > 0 and (name not in self.alone or name in self.shadowed)


@dataclass(frozen=True)
class Plan:
    layout: Layout
    rewrite: frozenset[int]   # buckets whose file is (re)written, so recompiled


def cold(request: Optional[int], n_units: int, jobs: int, others: int = 0) -> Layout:
    """The layout of a build from clean specs: a function of its arguments only."""
    n = bucket_count(n_units, jobs, others) if request is None else request
    return Layout(request, n, slots=min(max(jobs, 1), MAX_SLOTS))


def plan(request: Optional[int], names: Sequence[str], jobs: int, old: Optional[Layout],
         old_names: Iterable[str], edited: Iterable[str], *, keep: Iterable[str] = (),
         damaged: Iterable[int] = (), others: int = 0) -> Plan:
    """The layout after this update.  `old` is the trusted previous layout
    over the units `old_names` (None: none, or the generator or options
    changed, so that everything is new); `edited` are the units whose text
    changed with the specs, or that are new; `keep` those of them whose old
    text may stay in their bucket, overridden at link; `damaged` buckets
    whose file is missing or was changed on disk; `others`: see bucket_count."""
    if old is None or old.request != request:
        lay = cold(request, len(names), jobs, others)
        return Plan(lay, frozenset(range(lay.buckets)))
    if old.buckets == 0:
        return Plan(old, frozenset())
    n, live = old.buckets, set(names)
    text = {u for u in old_names if old.in_text(u)}
    alone = {a for a in old.alone if a in live}
    shadowed = {s for s in old.shadowed if s in live}
    edited, keep = {e for e in edited if e in live}, set(keep)
    rewrite = {bucket_of(u, n) for u in text - live} | set(damaged)
    if len(alone | edited) > MAX_ALONE:
        # A mass edit: back into their buckets, which are rewritten.
        rewrite |= {bucket_of(e, n) for e in edited}
        alone -= edited
        edited = set()
    for e in edited:
        if e in text and e in keep:
            shadowed.add(e)
        elif e in text:
            rewrite.add(bucket_of(e, n))
            shadowed.discard(e)
        alone.add(e)
    # A rewritten bucket takes back its units that are not being edited now,
    # and holds no old text any more.
    alone = {a for a in alone if a in edited or bucket_of(a, n) not in rewrite}
    shadowed = {s for s in shadowed & alone if bucket_of(s, n) not in rewrite}
    lay = Layout(request, n, tuple(sorted(alone)), tuple(sorted(shadowed)), old.slots)
    return Plan(lay, frozenset(rewrite))

