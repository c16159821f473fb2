"""The JSON build report of an SCons run (report/: its schema, docs/ci.md),
written at exit when asked: `--autograd-report=PATH`, `scons
AUTOGRAD_REPORT=PATH` or the environment variable of that name (a
relative path is taken from the folder `scons` was started in).

What it reads: the closing report's records (one per generated folder:
the generator's update result, its environment, its generation time),
every object node's state at exit (built, retrieved from the CacheDir, up
to date, failed, not reached), the commands' times and whether they went
through the launcher (a wrapper of the environment's SPAWN, which no
signature includes), and the launcher's statistics (sccache, ccache)
before its first compile and at exit.  Not written for `-h` or `-c`;
`-n` writes the units and no objects.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import optparse
import os
import re
import shlex
import sys
import threading
import time

import SCons.Node
import SCons.Script
import SCons.Subst

from autograd_scons.build_report import document, launcher_stats, records
from autograd_scons.build_report.json_schema import ENTRIES, TU_KINDS, USER
from autograd_scons.codegen.tree import translation_unit
from autograd_scons.tool import closing_lines

_LIB_SUFFIXES = (".so", ".dylib", ".dll", ".pyd")


class _Run:
    """This SCons run's report: asked for once, written once."""

    def __init__(self, path: str):
        self.path = path
        self.error = None          # a line the tool failed with while reading the SConscripts
        self.lock = threading.Lock()
        self.commands: list = []   # (kind, target path, start, end, launched)
        self.launcher: list = []   # its words, once a command ran through it
        self.environ: dict = {}    # the environment it ran in (its statistics are asked in the same)
        self.before = None
        self.asked = False


_RUN: list = []   # [the _Run] once a report is asked for


def _asked_path():
    given = SCons.Script.GetOption("autograd_report") or SCons.Script.ARGUMENTS.get(document.PATH_VARIABLE) \
        or os.environ.get(document.PATH_VARIABLE)
    return os.path.join(SCons.Script.GetLaunchDir(), given) if given else None


def install(env) -> None:
    """From the tool's generate(): the option, and when a report is asked
    for, the old one removed, the writer at exit, and env's SPAWN timed."""
    try:
        SCons.Script.AddOption("--autograd-report", dest="autograd_report", metavar="PATH",
                               help="write the build's JSON report there (docs/ci.md)")
    except optparse.OptionConflictError:  # added by another copy of this tool, or loaded twice
        pass
    if SCons.Script.GetOption("help") or SCons.Script.GetOption("clean"):
        return
    if not _RUN:
        path = _asked_path()
        if not path:
            return
        _RUN.append(_Run(path))
        document.clear(path)
        atexit.register(_write)
    if not isinstance(env["SPAWN"], _Timed):
        env["SPAWN"] = _Timed(env["SPAWN"], env)


def failed(message: str) -> None:
    """The line the tool stops the build with, for the report."""
    if _RUN and _RUN[0].error is None:
        _RUN[0].error = message


class _Timed:
    """SPAWN that records each command's kind, target, times and whether it
    ran through $AUTOGRAD_LAUNCHER (asking the launcher's statistics before
    the first one that does)."""

    def __init__(self, spawn, env):
        self.spawn, self.env = spawn, env

    def __call__(self, sh, escape, cmd, args, environ):
        run = _RUN[0]
        given = self.env.get("AUTOGRAD_LAUNCHER") or []   # (embedding: a string or a list)
        launcher = shlex.split(given) if isinstance(given, str) else [str(w) for w in given]
        n = len(launcher)
        launched = bool(n) and len(args) > n and all(a in (w, escape(w)) for a, w in zip(args, launcher))
        if launched:
            with run.lock:
                if not run.asked:
                    run.asked, run.launcher = True, launcher
                    run.before = launcher_stats.query(launcher, dict(environ))
                    run.environ = dict(environ)
        start = time.perf_counter()
        try:
            return self.spawn(sh, escape, cmd, args, environ)
        finally:
            kind, target = _command_kind(list(args))
            with run.lock:
                run.commands.append((kind, target, start, time.perf_counter(), launched))


def _unquoted(word: str) -> str:
    """An argument as SCons's POSIX escape quoted it for the shell, back as the word."""
    if len(word) > 1 and word[0] == word[-1] == '"':
        return re.sub(r'\\(["\\$`])', r"\1", word[1:-1])
    return word


def _command_kind(args: list) -> tuple:
    args = [_unquoted(str(a)) for a in args]
    target = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "-o"), None)
    if "-c" in args:
        return ("precompile" if "c++-header" in args else "compile"), target
    if "-shared" in args or (target or "").endswith(_LIB_SUFFIXES):
        return "link", target
    return "other", target


def _span(intervals: list) -> float:
    """Wall time covered by (start, end) intervals that may overlap."""
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def identity(env) -> dict:
    """The compiler, its version and the flags as the CacheDir signs them."""
    words = shlex.split(env.subst("$CXX"))
    version = env.get("CXXVERSION") or None
    flags = env.subst("$SHCXXFLAGS $SHCCFLAGS $_CCCOMCOM", SCons.Subst.SUBST_SIG).split()
    torch = None
    try:
        key = env.subst("$AUTOGRAD_PCH_KEY")
        if key:
            torch = {"version": str(json.loads(key)[0]), "key": key}
    except (ValueError, IndexError, TypeError):
        pass
    digest = hashlib.sha256(json.dumps([words, version, flags, torch]).encode()).hexdigest()
    return {"torch": torch, "compiler": {"command": words, "version": version}, "flags": flags, "digest": digest}


def _folders() -> tuple:
    """(the report's folders, {folder abspath + sep: index})"""
    folders: list = []
    where: dict = {}
    for r in closing_lines.REPORT.records:
        env = r.env
        ident = identity(env) if env is not None else None
        where[r.out.abspath + os.sep] = len(folders)
        folders.append(records.folder(r.out.abspath, r.result, r.specs, r.includes, r.generate_s, ident, r.note))
    return folders, where


def _fate(node, failed_build: bool):
    state = node.get_state()
    if state == SCons.Node.executed:
        return "retrieved" if node in closing_lines.RETRIEVED else "compiled"
    if state == SCons.Node.up_to_date:
        return "up_to_date"
    if state == SCons.Node.failed:
        return "failed"
    return "not_built" if failed_build or state != SCons.Node.no_state else None


def _objects(where: dict, failed_build: bool, seconds: dict) -> list:
    out = []
    for node, src in closing_lines.object_nodes():
        fate = _fate(node, failed_build)
        if fate is None:
            continue
        path = src.abspath if src is not None else None
        folder, kind = None, USER
        for prefix, i in where.items():
            if path and path.startswith(prefix):
                folder, kind = i, TU_KINDS[translation_unit(path[len(prefix):].replace(os.sep, "/")).kind]
                break
        out.append({"path": node.abspath, "source": path, "kind": kind, "folder": folder, "fate": fate,
                    "seconds": seconds.get(node.abspath)})
    return sorted(out, key=lambda o: o["path"])


def _launcher_part(run: _Run, objects: list) -> tuple:
    """(the report's launcher record, hits not placed on objects)."""
    if not run.launcher:
        return None, 0
    after = launcher_stats.query(run.launcher, run.environ) if run.before is not None else None
    hits, misses = launcher_stats.difference(run.before, after)
    launched_targets = {os.path.abspath(t) for k, t, _, _, went in run.commands if went and k == "compile" and t}
    launched = [o for o in objects if o["fate"] == "compiled" and o["path"] in launched_targets]
    unplaced = 0
    if hits is not None and launched:
        if hits == len(launched) and misses == 0:   # the statistics say which: every one
            for o in launched:
                o["fate"] = "launcher_hit"
        elif hits:   # some of them: counted, not placed on objects
            unplaced = min(hits, len(launched))
    part = {"command": run.launcher, "statistics": launcher_stats.kind_of(run.launcher),
            "before": run.before, "after": after, "hits": hits, "misses": misses}
    return part, unplaced


def _write() -> None:
    run = _RUN[0]
    try:
        doc = _assemble(run)
        document.write(run.path, doc)
    except Exception as e:  # never a traceback at exit; the build's own status stands
        sys.stderr.write(f"scons: warning: cannot write the build report {run.path}: {e}\n")


def _assemble(run: _Run) -> dict:
    import SCons.Script.Main as Main
    status = Main.exit_status
    failed_build = bool(status)
    dry = bool(SCons.Script.GetOption("no_exec"))
    folders, where = _folders()
    with run.lock:
        commands = list(run.commands)
    seconds = {os.path.abspath(t): round(e - s, 4) for k, t, s, e, _ in commands if k == "compile" and t}
    objects = [] if dry else _objects(where, failed_build, seconds)
    launcher, unplaced = _launcher_part(run, objects)
    error = None
    if failed_build:
        failures = SCons.Script.GetBuildFailures()
        error = run.error or (f"{failures[0].node}: {failures[0].errstr}" if failures else f"exit status {status}")
    entry = os.environ.get(document.ENTRY_VARIABLE, "scons")
    envs = [r.env for r in closing_lines.REPORT.records if r.env is not None]
    cachedir = getattr(envs[0], "_CacheDir_path", None) if envs else None
    times = {"total_s": time.time() - SCons.Script.start_time,
             "generate_s": sum(f["generate_s"] for f in folders),
             "compile_s": _span([(s, e) for k, _, s, e, _ in commands if k in ("compile", "precompile")]),
             "link_s": sum(e - s for k, _, s, e, _ in commands if k == "link")}
    return document.assemble(entry if entry in ENTRIES else "scons", "failed" if failed_build else "ok",
                             error=error, dry_run=dry,
                             cachedir=os.path.abspath(cachedir) if cachedir else None, launcher=launcher,
                             times=times, folders=folders, objects=objects, unattributed_hits=unplaced)
