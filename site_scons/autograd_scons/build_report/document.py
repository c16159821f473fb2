"""The whole build report: assembled from its parts, summarised, written
atomically, read back and checked.

A build that asks for a report removes the previous one at its start
(clear) and writes the new one at its end, in one rename (write): a
reader never sees half a report, and a killed build leaves none, so a
CI gate finds no report rather than the last good build's.  A failed
build writes what it knows (status "failed", its first error, the objects
it built and those it did not).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Optional

from autograd_scons.base.errors import Error
from autograd_scons.codegen.engine.writer import write_atomic
from .json_schema import FATES, FORMAT, VERSION, problems

# The variable naming the report's path (scons: also a command-line variable
# or --autograd-report), and the one that says which entry point started
# the build (buildenv/runner.py sets it for the builds it runs).
PATH_VARIABLE = "AUTOGRAD_REPORT"
ENTRY_VARIABLE = "AUTOGRAD_REPORT_ENTRY"


class ReportError(Error, ValueError):
    """A report that cannot be read or is not one (one line)."""


def tool_version() -> Optional[str]:
    try:
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("autograd-functions-scons")
        except PackageNotFoundError:   # a checkout's SConstruct, not installed
            return None
    except ImportError:
        return None


def summary(folders: list, objects: list, unattributed_hits: int = 0) -> dict:
    """The counts a CI gate reads.  `unattributed_hits`: launcher hits its
    statistics counted but could not place on objects (they are among the
    objects whose fate says compiled)."""
    units = [u for f in folders for u in f["units"]]
    fates = {fate: sum(1 for o in objects if o["fate"] == fate) for fate in FATES}
    moved = min(unattributed_hits, fates["compiled"])
    fates["compiled"] -= moved
    fates["launcher_hit"] += moved
    needed = fates["compiled"] + fates["retrieved"] + fates["launcher_hit"]
    hits = fates["retrieved"] + fates["launcher_hit"]
    return {"units": sum(1 for u in units if u["state"] != "removed"),
            "regenerated": sum(1 for u in units if u["state"] == "regenerated"),
            "removed": sum(1 for u in units if u["state"] == "removed"),
            "objects": len(objects), **fates,
            "hit_rate": round(hits / needed, 6) if needed else None}


def assemble(entry: str, status: str, *, error: Optional[str] = None, dry_run: bool = False,
             cachedir: Optional[str] = None, launcher: Optional[dict] = None, times: Optional[dict] = None,
             folders: Optional[list] = None, objects: Optional[list] = None, unattributed_hits: int = 0) -> dict:
    folders, objects = folders or [], objects or []
    times = dict({"total_s": 0.0, "generate_s": 0.0, "compile_s": 0.0, "link_s": 0.0}, **(times or {}))
    return {"format": FORMAT, "version": VERSION, "tool": tool_version(), "entry": entry, "status": status,
            "error": error, "dry_run": dry_run, "cachedir": cachedir, "launcher": launcher,
            "times": {k: round(v, 4) for k, v in times.items()},
            "summary": summary(folders, objects, unattributed_hits), "folders": folders, "objects": objects}


def clear(path: str) -> None:
    """The previous report gone, before a build that will write a new one."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write(path: str, doc: dict) -> None:
    """`doc` at `path` in one rename (its folder made if missing)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    write_atomic(path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())


def write_up_to_date(path: str, entry: str, seconds: float) -> None:
    """The report of a build that did not run: a stamp said everything is
    up to date (load()'s, patch-torch's), so no folder was looked at.  A
    report that cannot be written is a warning, as at the end of a build:
    the build itself went well."""
    try:
        write(path, assemble(entry, "up_to_date", times={"total_s": seconds}))
    except OSError as e:
        print(f"autograd_scons: warning: cannot write the build report {path}: {e.strerror or e}", file=sys.stderr)


def requested(environ=os.environ) -> Optional[str]:
    """The report path a Python entry point (load(), patch-torch) is asked
    for, absolute (relative to the current folder), or None."""
    path = environ.get(PATH_VARIABLE, "")
    return os.path.abspath(path) if path else None


def read(path: str) -> dict:
    """A report, checked against the schema; ReportError (one line) otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise ReportError(f"{path}: no such report (the build was not asked for one with "
                          f"{PATH_VARIABLE}=, or did not finish)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    except ValueError as e:
        raise ReportError(f"{path}: not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ReportError(f"{path}: not an autograd-functions-scons build report")
    if doc.get("version") != VERSION:
        raise ReportError(f"{path}: report version {doc.get('version')!r}; this tool reads version {VERSION}")
    found = problems(doc)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ReportError(f"{path}: not a valid report: {found[0]}{more}")
    return doc
