"""`python -m autograd_scons bench PROJECT`: the cache-hit benchmark of
an extension, in temporary copies of it (project_runs.py), never in the
project itself.

PROJECT is a folder with an SConstruct (run by SCons, with the VAR=value
arguments given after it) or a Python file that calls load() (run by this
Python, with those arguments).  Each repetition takes a fresh copy, an
empty CacheDir and an empty $AUTOGRAD_EXTENSIONS_DIR (load()'s build
folders, the shared precompiled prelude), and runs in order:

    cold     the copy built from nothing
    noop     built again, unchanged
    formula  one formula edited (the first entry's, or --formula OP's: `F`
             becomes `(F)`, which compiles and computes the same)
    header   one header edited (a comment appended: --header FILE, else the
             first header the generated code includes, else the project's first)
    remove, add (asked for with --scenarios): the formula's entry removed, then put back
    second   a second, unedited copy in another folder, through the same
             CacheDir, as on another runner: its hit rate (the extensions
             folder emptied, at the same path: the prelude's path is in the
             signature of the objects compiled against it)

Every build writes its JSON report (build_report/document.py), from which the
counts come; wall and CPU time (the build's and its children's) are
measured around it.  The table (median, min and max of each figure over
the repetitions) is printed, and written with the runs as JSON and
Markdown (appended to $GITHUB_STEP_SUMMARY when set); each scenario's last
report is kept for a gate (`python -m autograd_scons report`).  A
progress line per build goes to stderr.  docs/ci.md has a CI recipe.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Optional, TypeGuard

from . import project_runs
from .project_runs import BenchError, Project
from autograd_scons.build_report.document import PATH_VARIABLE, ReportError, read, tool_version

FORMAT = "autograd-scons-bench"
VERSION = 1
SCENARIOS = {
    "cold": "cold build",
    "noop": "no-op",
    "formula": "one formula edited",
    "header": "one header edited",
    "remove": "one entry removed",
    "add": "the entry added back",
    "second": "second checkout, same cache",
}
DEFAULT = ("cold", "noop", "formula", "header", "second")
FIGURES = ("wall_s", "cpu_s", "compiled", "retrieved", "hit_rate")
_SCONS = "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Bench:
    def __init__(self, project: Project, args, work: str, say=_stderr):
        self.project, self.args, self.work, self.say = project, args, work, say
        self.runs: dict = {name: [] for name in args.scenarios}
        self.skipped: dict = {}     # scenario -> why
        self.edited: dict = {}      # scenario -> what its edit changed
        self.reports: dict = {}     # scenario -> its last report's path

    # -- one build ---------------------------------------------------------

    def command(self) -> list:
        extra = list(self.args.arguments)
        if self.project.script:
            return [sys.executable, self.project.script, *extra]
        return [sys.executable, "-c", _SCONS, *extra]

    def build(self, name: str, rep: int, root: str, extensions: str, cache: str) -> dict:
        """Build the copy at `root`; its figures (and report) recorded under `name`."""
        report = os.path.join(self.work, "reports", f"{name}-{rep}.json")
        log = os.path.join(self.work, "logs", f"{name}-{rep}.log")
        for d in (os.path.dirname(report), os.path.dirname(log)):
            os.makedirs(d, exist_ok=True)
        env = dict(os.environ, **{PATH_VARIABLE: report,
                                  # load()'s build folders and the shared precompiled prelude
                                  "AUTOGRAD_EXTENSIONS_DIR": extensions})
        cmd = self.command()
        if self.args.cachedir:
            if self.project.script:
                env["AUTOGRAD_CACHEDIR"] = cache
            else:
                cmd.append(f"CACHEDIR={cache}")
        start = time.perf_counter()
        with open(log, "wb") as out:
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        try:
            doc = read(report)
        except ReportError as e:
            doc = None
            why = str(e)
        if proc.returncode != 0 or doc is None or doc["status"] == "failed":
            said = (doc or {}).get("error") or _last_line(log) or (why if doc is None else "")
            raise BenchError(f"{SCENARIOS[name]} (repetition {rep + 1}) failed (exit {proc.returncode}): "
                             f"{said} (log: {log})")
        s = doc["summary"]
        run = {"wall_s": round(wall, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
               "compiled": s["compiled"], "retrieved": s["retrieved"], "launcher_hit": s["launcher_hit"],
               "up_to_date": s["up_to_date"], "hit_rate": s["hit_rate"], "regenerated": s["regenerated"],
               "status": doc["status"]}
        self.runs[name].append(run)
        self.reports[name] = report
        rate = "n/a" if run["hit_rate"] is None else f"{run['hit_rate']:.2f}"
        self.say(f"bench: [{rep + 1}/{self.args.repeat}] {SCENARIOS[name]}: {wall:.2f} s wall, "
                 f"{run['cpu_s']:.2f} s CPU, {run['compiled']} compiled, {run['retrieved']} retrieved, "
                 f"hit rate {rate}")
        return doc

    # -- one repetition ----------------------------------------------------

    def repetition(self, rep: int) -> None:
        base = os.path.join(self.work, f"rep{rep}")
        cache, ext = os.path.join(base, "cache"), os.path.join(base, "extensions")
        a = project_runs.copy(self.project, os.path.join(base, "a", "project"))
        wanted = self.args.scenarios
        cold = self.build("cold", rep, a, ext, cache)
        folder = cold["folders"][0] if cold["folders"] else None
        derivatives = folder["specs"]["derivatives"] if folder else None
        if "noop" in wanted:
            self.build("noop", rep, a, ext, cache)
        if "formula" in wanted:
            if self._editable(derivatives, a, "formula"):
                self.edited["formula"] = project_runs.edit_formula(derivatives, self.args.formula)
                self.build("formula", rep, a, ext, cache)
        if "header" in wanted:
            header = project_runs.find_header(a, folder["includes"] if folder else [], self.args.header)
            if header is None:
                self.skipped["header"] = "no header in the project (name one with --header FILE)"
            else:
                project_runs.edit_header(header)
                self.edited["header"] = os.path.relpath(header, a)
                self.build("header", rep, a, ext, cache)
        if "remove" in wanted or "add" in wanted:
            removed = project_runs.remove_entry(derivatives, self.args.formula) \
                if self._editable(derivatives, a, "remove") else None
            if removed is None:
                self.skipped["remove"] = self.skipped["add"] = self.skipped.get("remove") or \
                    "derivatives.yaml has one entry (the generator refuses a file without any)"
            else:
                self.edited["remove"] = self.edited["add"] = removed[0]
                assert derivatives is not None   # (removed from it)
                self.build("remove", rep, a, ext, cache)
                project_runs.add_entry(derivatives, removed)
                self.build("add", rep, a, ext, cache)
        if "second" in wanted:
            # Another runner: the project in another folder, the cache shared,
            # nothing else (its extensions folder, at the same path, empty).
            if os.path.exists(ext):
                os.replace(ext, os.path.join(base, "extensions-of-a"))
            b = project_runs.copy(self.project, os.path.join(base, "b", "project"))
            self.build("second", rep, b, ext, cache)
        if not self.args.keep:
            shutil.rmtree(base, ignore_errors=True)

    def _editable(self, derivatives: Optional[str], copy_root: str, name: str) -> TypeGuard[str]:
        if derivatives is None:
            self.skipped[name] = "the build generated no folder"
        elif not project_runs.inside(derivatives, copy_root):
            self.skipped[name] = f"its derivatives.yaml ({derivatives}) is not in the project"
        else:
            return True
        return False

    def run(self) -> dict:
        for rep in range(self.args.repeat):
            self.repetition(rep)
        return self.results()

    # -- results -----------------------------------------------------------

    def results(self) -> dict:
        rows = []
        for name in self.args.scenarios:
            runs = self.runs[name]
            row = {"name": name, "label": SCENARIOS[name], "runs": runs, "skipped": self.skipped.get(name),
                   "edited": self.edited.get(name)}
            for fig in FIGURES:
                values = [r[fig] for r in runs if r[fig] is not None]
                row[fig] = ({"median": statistics.median(values), "min": min(values), "max": max(values)}
                            if values else None)
            rows.append(row)
        return {"format": FORMAT, "version": VERSION, "tool": tool_version(), "project": self.project.root,
                "script": self.project.script, "arguments": list(self.args.arguments),
                "repeat": self.args.repeat, "cachedir": self.args.cachedir, "scenarios": rows,
                "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version()},
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _last_line(log: str) -> str:
    try:
        with open(log, errors="replace") as f:
            lines = [x.strip() for x in f.read().splitlines() if x.strip()]
    except OSError:
        return ""
    errors = [x for x in lines if "error" in x.lower() or x.startswith("scons: ***")]
    return (errors or lines or [""])[0 if errors else -1]


def _cell(stat, digits: int) -> str:
    if stat is None:
        return "n/a"
    fmt = f"{{:.{digits}f}}"
    if stat["min"] == stat["max"]:
        return fmt.format(stat["median"])
    return f"{fmt.format(stat['median'])} ({fmt.format(stat['min'])}-{fmt.format(stat['max'])})"


def markdown(res: dict) -> str:
    """The table: median (min-max) of each figure over the repetitions."""
    what = os.path.basename(res["project"]) + (f"/{res['script']}" if res["script"] else "")
    lines = [f"### autograd_scons bench: {what}", "",
             f"{res['repeat']} repetition(s); median (min-max); "
             f"{res['machine']['cpus']} CPUs, Python {res['machine']['python']}", "",
             "| scenario | wall (s) | CPU (s) | compiled | from the cache | hit rate |",
             "| --- | --- | --- | --- | --- | --- |"]
    for row in res["scenarios"]:
        label = row["label"] + (f" ({row['edited']})" if row["edited"] else "")
        if row["skipped"] and not row["runs"]:
            lines.append(f"| {label} | skipped: {row['skipped']} | | | | |")
            continue
        lines.append(f"| {label} | {_cell(row['wall_s'], 2)} | {_cell(row['cpu_s'], 2)} | "
                     f"{_cell(row['compiled'], 0)} | {_cell(row['retrieved'], 0)} | {_cell(row['hit_rate'], 2)} |")
    return "\n".join(lines) + "\n"


def write_results(res: dict, out: str, reports: dict) -> list:
    """bench.json, bench.md and reports/<scenario>.json in `out`; the paths."""
    from autograd_scons.codegen.engine.writer import write_atomic
    os.makedirs(os.path.join(out, "reports"), exist_ok=True)
    paths = [os.path.join(out, "bench.json"), os.path.join(out, "bench.md")]
    write_atomic(paths[0], (json.dumps(res, indent=1, sort_keys=True) + "\n").encode())
    write_atomic(paths[1], markdown(res).encode())
    for name, path in reports.items():
        shutil.copyfile(path, os.path.join(out, "reports", f"{name}.json"))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(markdown(res) + "\n")
        except OSError as e:   # the results are written: the summary is a copy
            print(f"bench: warning: cannot append to $GITHUB_STEP_SUMMARY ({summary}): {e.strerror or e}",
                  file=sys.stderr)
    return paths


def add_command(sub) -> None:
    p = sub.add_parser("bench", help="benchmark a project's builds (cold, no-op, a formula edit, a header "
                                     "edit, a second checkout through the same cache) in temporary copies")
    p.add_argument("project", metavar="PROJECT", help="a folder with an SConstruct, or a Python file calling load()")
    p.add_argument("arguments", nargs="*", metavar="ARG",
                   help="passed to every build: scons's (VAR=value, -jN), or the script's")
    p.add_argument("-n", "--repeat", type=int, default=3, metavar="N", help="repetitions (default %(default)s)")
    p.add_argument("-o", "--out", default="autograd-bench", metavar="DIR",
                   help="where bench.json, bench.md and each scenario's last report go (default %(default)s)")
    p.add_argument("--scenarios", default=",".join(DEFAULT),
                   help=f"comma-separated, of {', '.join(SCENARIOS)} (default %(default)s)")
    p.add_argument("--formula", metavar="OP", help="edit this entry's formula (its name before the parenthesis), "
                                                   "not the first entry's")
    p.add_argument("--header", metavar="FILE", help="edit this header (relative to the project)")
    p.add_argument("--no-cachedir", dest="cachedir", action="store_false",
                   help="no CacheDir (CACHEDIR=, AUTOGRAD_CACHEDIR): a launcher's cache alone")
    p.add_argument("--keep", action="store_true", help="keep the copies (in the work folder, said at the end)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(run=_cmd_bench)


def _cmd_bench(args) -> int:
    names = [s for s in args.scenarios.split(",") if s]
    bad = [s for s in names if s not in SCENARIOS]
    if bad or args.repeat < 1:
        print(f"error: bench: {'unknown scenario ' + repr(bad[0]) if bad else '--repeat must be 1 or more'} "
              f"(the scenarios: {', '.join(SCENARIOS)})", file=sys.stderr)
        return 2
    args.scenarios = [s for s in SCENARIOS if s in names or s == "cold"]   # in order; cold starts each
    try:
        project = Project.of(args.project)
    except BenchError as e:
        print(f"error: bench: {e}", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="autograd-bench-")
    bench = Bench(project, args, work, say=(lambda line: None) if args.quiet else _stderr)
    try:
        res = bench.run()
    except BenchError as e:
        print(f"error: bench: {e}", file=sys.stderr)
        print(f"bench: work folder kept: {work}", file=sys.stderr)
        return 1
    paths = write_results(res, args.out, bench.reports)
    print(markdown(res))
    print(f"bench: written {', '.join(paths)} and {os.path.join(args.out, 'reports')}/")
    if args.keep:
        print(f"bench: the copies are in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0
