"""The autograd_functions tool's closing report: after the build, one line
per AutogradFunctions/AutogradLibrary call (what was regenerated, how it
compiles, how many of its TUs this run compiled), any `--autograd-explain`
answers, and the count of objects compiled in all.

The calls of one SCons run add their records here while the SConscripts
are read; the report is printed at exit, when SCons has built (or failed),
so that the compile counts are this run's.
"""

import atexit
import os
import sys
from dataclasses import dataclass
from typing import Any, Optional

import SCons.Node
import SCons.Node.FS
import SCons.Script

from autograd_scons.tool.override import WEAK_OBJECTS
from autograd_scons.codegen.engine.update_summary import explain, foreign_line, layout_line, report
from autograd_scons.codegen.tree import bucket_index

_OBJECT_SUFFIXES = (".o", ".os", ".obj")


@dataclass
class Record:
    out: Any                      # the output folder's Dir node
    result: Any                   # its codegen.engine.incremental.Result
    note: Optional[str] = None    # said instead of the compile counts (the library's fast path)
    # For the JSON report (json_report.py):
    env: Any = None               # the environment that compiles it
    specs: tuple = (None, None, None)   # native_functions, derivatives, tags: their paths
    includes: tuple = ()
    generate_s: float = 0.0       # the generator's update, wall
    target: Optional[str] = None  # "torch>=2.10" for the stable target (tool/stable_build.py)


class ClosingReport:
    def __init__(self):
        self.records: list[Record] = []

    def add(self, out, result, **more) -> Record:
        """A record for one generated folder; printed at exit."""
        if not self.records:
            atexit.register(self.print)
            _track_retrievals()
        record = Record(out, result, **more)
        self.records.append(record)
        return record

    def print(self):
        dry = bool(SCons.Script.GetOption("no_exec"))
        objects = [] if dry else _executed_objects()
        ours = 0
        # Retrieved from a CacheDir: built, not compiled (said apart).
        retrieved = [o for o in objects if o[0] in RETRIEVED]
        objects = [o for o in objects if o[0] not in RETRIEVED]
        for r in self.records:
            how = (f"stable target ({r.target}): the autograd as Python, the registration in 1 TU"
                   if r.target else layout_line(r.result))
            said = report(r.result)
            if r.target and not r.result.reasons:   # (the stable target parses its small specs every run)
                said = said.split("; ")[0] + "; nothing changed"
            line = f"autograd_functions: {r.out}: {said}; {how}"
            if r.note:
                line += f"; {r.note}"
            elif objects or not dry:
                bucket, alone = _compile_counts(objects, r.out)
                ours += bucket + alone
                line += (f"; {bucket + alone} compiled ({bucket} bucket{'s' if bucket != 1 else ''}, "
                         f"{alone} other TU{'s' if alone != 1 else ''})")
                cached = sum(_compile_counts(retrieved, r.out))
                if cached:
                    line += f", {cached} retrieved from the cache"
            print(line)
            if r.result.foreign:
                print(f"autograd_functions: warning: {foreign_line(r.result)}")
            for unit in explain_units():
                print(f"autograd_functions: explain: {explain(r.result, unit)}")
        if self.records and not dry:
            print(f"autograd_functions: {len(objects)} object{'s' if len(objects) != 1 else ''} compiled in all "
                  f"({ours} generated, {len(objects) - ours} other)"
                  + (f", {len(retrieved)} retrieved from the cache" if retrieved else ""))
        sys.stdout.flush()


# One per SCons run (a process): every call of the tool reports here.
REPORT = ClosingReport()


def explain_units():
    """From `--autograd-explain=OP`, `scons AUTOGRAD_EXPLAIN=OP,OP` or the
    environment variable of that name."""
    units = list(SCons.Script.GetOption("autograd_explain") or [])
    for text in (SCons.Script.ARGUMENTS.get("AUTOGRAD_EXPLAIN", ""), os.environ.get("AUTOGRAD_EXPLAIN", "")):
        units += [o for o in text.split(",") if o]
    return units


# The files this run retrieved from a CacheDir.  SCons marks such a node
# (`cached`) only until the node is marked built, which clears it: the tool
# records them as they come.
RETRIEVED: set = set()


def _track_retrievals():
    File = SCons.Node.FS.File
    if getattr(File.retrieve_from_cache, "tracked", False):
        return
    retrieve = File.retrieve_from_cache

    def retrieve_from_cache(self):
        hit = retrieve(self)
        if hit:
            RETRIEVED.add(self)   # (-j threads: set.add is atomic)
        return hit

    retrieve_from_cache.tracked = True
    File.retrieve_from_cache = retrieve_from_cache


def _executed_objects():
    """(object node, its first source) for every object this run built
    (compiled, or retrieved from a CacheDir: RETRIEVED)."""
    return [(n, s) for n, s in object_nodes() if n.get_state() == SCons.Node.executed]


def object_nodes():
    """(object node, its first source) for every object SCons knows of that
    a builder makes (not the weakened copies: no compile makes them)."""
    # From the root, not the top folder: a build folder outside the checkout
    # (BUILD=/elsewhere) holds objects too.
    stack, found = [SCons.Node.FS.get_default_fs().Top.root], []
    while stack:
        d = stack.pop()
        for name, n in d.entries.items():
            if name in (".", ".."):
                continue
            if isinstance(n, SCons.Node.FS.Dir):
                stack.append(n)
            elif n.name.endswith(_OBJECT_SUFFIXES) and n.has_builder() and n not in WEAK_OBJECTS:
                sources = n.sources
                found.append((n, sources[0] if sources else None))
    return found


def _compile_counts(objects, out):
    """(bucket, alone): objects compiled from sources under `out` (alone:
    edit TUs, or units' own TUs with unity=0)."""
    bucket = alone = 0
    prefix = out.abspath + os.sep
    for _, src in objects:
        path = src.abspath if src is not None else ""
        if path.startswith(prefix):
            if bucket_index(path[len(prefix):].replace(os.sep, "/")) is not None:
                bucket += 1
            else:
                alone += 1
    return bucket, alone
