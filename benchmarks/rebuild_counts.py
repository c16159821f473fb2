"""The counts every run of ours in bench_rebuild.py must show (not a
benchmark itself): the tool's report line, read back, against what the
scenario expects and what the compiler log shows.  A difference fails the
benchmark (exit 1), so its timings are never of a build that did too much
or too little.
"""

from __future__ import annotations

import re

REPORT_RE = re.compile(r"^autograd_functions: \S+: (\d+) Functions(?: \+ (\d+) op kernels)?: (?:would be )?"
                       r"(\d+) regenerated, (\d+) unchanged, (?:would be )?(\d+) removed(.*)$", re.M)


class Miscount(Exception):
    pass


def parse_report(out: str) -> dict:
    """The figures of the tool's (first) report line in a scons output."""
    m = REPORT_RE.search(out)
    if m is None:
        raise Miscount(f"no autograd_functions report in the scons output:\n{out[-2000:]}")
    rest = m.group(6)
    identical = re.search(r"(\d+) re-rendered identical", rest)
    recompiled = re.search(r"; (\d+) compiled \(\d+ buckets?, \d+ other TUs?\)", rest)
    return {"functions": int(m.group(1)) + int(m.group(2) or 0), "regenerated": int(m.group(3)),
            "removed": int(m.group(5)), "identical": int(identical.group(1)) if identical else 0,
            "recompiled": int(recompiled.group(1)) if recompiled else None, "line": m.group(0)}


def problems(expect: tuple, rep: dict, compiled: int | None, identical: int = 0) -> list[str]:
    """What is wrong with a run: `expect` is (regenerated, removed, recompiled),
    `rep` its parsed report, `compiled` how many objects the compiler made
    (None: not a compiling run); `identical`: units re-rendered to unchanged
    text that are due (the op kernels of an edited entry)."""
    regen, removed, recompiled = expect
    out = []
    if rep["identical"] != identical:
        out.append(f"{rep['identical']} cache miss(es) where a hit was due: Function(s) re-rendered to "
                   f"unchanged text, their key changed though their inputs did not")
    if rep["regenerated"] != regen:
        out.append(f"{rep['regenerated']} Functions regenerated, expected {regen}")
    if rep["removed"] != removed:
        out.append(f"{rep['removed']} Functions removed, expected {removed}")
    if compiled is not None and recompiled is not None and compiled != recompiled:
        out.append(f"{compiled} objects recompiled, expected {recompiled}")
    if compiled is not None and rep["recompiled"] is not None and rep["recompiled"] != compiled:
        out.append(f"the report says {rep['recompiled']} objects recompiled, the compiler ran {compiled} times")
    return out


def cold_problems(rep: dict, compiled: int | None) -> list[str]:
    """A cold run generates everything (and, when it compiles, compiles what the report says)."""
    out = []
    if rep["regenerated"] != rep["functions"]:
        out.append(f"{rep['regenerated']} of {rep['functions']} generated")
    if compiled is not None and rep["recompiled"] is not None and rep["recompiled"] != compiled:
        out.append(f"the report says {rep['recompiled']} objects recompiled, the compiler ran {compiled} times")
    return out
