"""The torch versions a project supports, and the span a merged wheel
requires: specifiers over torch's release numbers, read without
`packaging` (the backend's build environment may not have it; pip's
isolated one has only build-system.requires).

A project states its span once, in build-system.requires
(`torch>=2.13,<2.15`, what `new` writes); each variant wheel still pins the
minor it was built with (`torch==2.13.*`, build_meta._requires), and a
merged wheel requires exactly the minors it carries (`requires_for`).

    contains(">=2.13,<2.15", "2.14.1+cu130")  -> True
    requires_for([(2, 13), (2, 15)])          -> ">=2.13,<2.16,!=2.14.*"
"""

import re

from autograd_scons.base.errors import Error

# The clauses this module reads itself: what `new`, build_meta and the
# merge write, and what an author most likely writes by hand.
_CLAUSE = re.compile(r"(>=|<=|<|>|==|!=)\s*(\d+(?:\.\d+)*)(\.\*)?")


class BadSpan(Error, ValueError):
    """A specifier this module cannot read: one line (`str()`)."""


def release(version):
    """(2, 14, 1) of "2.14.1+cu130" (local label and pre-release dropped:
    a specifier without them compares the public release)."""
    m = re.match(r"\d+(?:\.\d+)*", version.strip())
    if not m:
        raise BadSpan(f"{version!r} is not a version")
    return tuple(int(p) for p in m.group(0).split("."))


def minor(version):
    """(2, 14) of "2.14.1+cu130"."""
    parts = release(version) + (0,)
    return parts[:2]


def _clauses(spec):
    clauses = []
    for text in [c.strip() for c in spec.split(",") if c.strip()]:
        m = _CLAUSE.fullmatch(text)
        if not m or (m.group(3) and m.group(1) not in ("==", "!=")):
            raise BadSpan(f"torch{spec}: cannot read {text!r} (write clauses such as >=2.13, <2.15, ==2.13.*, "
                          "!=2.14.*)")
        clauses.append((m.group(1), tuple(int(p) for p in m.group(2).split(".")), bool(m.group(3))))
    if not clauses:
        raise BadSpan(f"torch{spec!r}: no version clause")
    return clauses


def _pad(a, b):
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


def contains(spec, version):
    """Whether torch `version` satisfies `spec` (`>=2.13,<2.15`), as
    packaging's SpecifierSet decides it for these clauses."""
    have = release(version)
    for op, want, star in _clauses(spec):
        if star:  # ==2.13.*: the prefix matches
            match = have[:len(want)] + (0,) * max(0, len(want) - len(have)) == want
            ok = match if op == "==" else not match
        else:
            a, b = _pad(have, want)
            ok = {">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b, "==": a == b, "!=": a != b}[op]
        if not ok:
            return False
    return True


def check(spec):
    """`spec` itself when readable, else BadSpan."""
    _clauses(spec)
    return spec


def pinned_minor(spec):
    """(X, Y) when `spec` is exactly `==X.Y.*` (a one-minor project), else None."""
    m = re.fullmatch(r"==(\d+)\.(\d+)\.\*", spec.replace(" ", ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def default_span(version):
    """What `new` writes for the torch installed now: its minor and the
    next one, so a project made today builds unedited under the next
    release too (docs/shipping.md: one variant or several)."""
    major, mnr = minor(version)
    return f">={major}.{mnr},<{major}.{mnr + 2}"


def requires_for(minors):
    """The torch specifier of a wheel carrying the (major, minor) pairs in
    `minors`: from the lowest to past the highest, each missing minor
    between them excluded, so that pip refuses exactly the minors without
    a variant.  Minors of two torch majors are BadSpan: no release says
    which minors the older major ended with."""
    found = sorted(set(minors))
    if not found:
        raise BadSpan("no torch minor")
    if len({m for m, _ in found}) > 1:
        raise BadSpan(f"variants for torch {', '.join(f'{a}.{b}' for a, b in found)}: one wheel spans one torch "
                      "major (merge each major's variants separately)")
    major, low, high = found[0][0], found[0][1], found[-1][1]
    gaps = [f"!={major}.{m}.*" for m in range(low + 1, high) if (major, m) not in found]
    if low == high:
        return f"=={major}.{low}.*"
    return ",".join([f">={major}.{low}", f"<{major}.{high + 1}"] + gaps)
