#!/usr/bin/env python3
"""What an edit costs: ours (scons + the tool) against torchgen, on torch's specs.

On temporary copies of torch's own specs, one run takes the scenarios of
benchmarks/rebuild_scenarios.py side by side, each repeated (medians, min and
max), and for each, on the same edited files:

  ours, generate    `scons SPECS=torch generate`: the tool regenerates;
  ours, full        `scons SPECS=torch -jN`: the tool regenerates, SCons
                    recompiles the changed TUs and relinks the library;
  torchgen          load_derivatives + gen_autograd_functions_lib and
                    gen_autograd_functions_python (torch's own job; with
                    --python 0 the lib alone; it rewrites only files whose
                    contents changed), then, when Functions.cpp changed,
                    compiling Functions.cpp and python_functions_0..4.cpp
                    (--python 0: Functions.cpp alone) at our -j, with the
                    same compiler (--cxx g++|clang++) and flags as our TUs;
  floors            an empty SConstruct's `scons`; one per-op TU's compile
                    (with and without the precompiled prelude); the header
                    parse (one TU of `#include "prelude_impl.h"` alone), the
                    unit of CPU time every scenario is also reported in.

Compiling all TUs for every scenario (hours on 2 cores) is avoided: SCons is
given one compiler command for the whole run, benchmarks/_cxxwrap.py, which
compiles for real or writes a stand-in object, as a control file SCons does
not see says.  SCons signs objects by command line and compiler bytes, both
fixed, so what it decides to rebuild is what it would decide with g++.  The
graph is brought up to date with stand-ins (copies of one real per-op object
with renamed symbols, so the relink links real-sized ELF objects), then every
measured build compiles what it rebuilds for real.  The cold full build is an
estimate (Functions x the per-TU time / jobs) unless the long `cold_build`
scenario is asked for by name.

Every run of ours is checked (benchmarks/rebuild_counts.py): a miscount fails
the run (exit 1).  The table and chart come from benchmarks/rebuild_report.py.

    python benchmarks/bench_rebuild.py [--repeat 5] [--out DIR] [--scenarios a,b]
    python benchmarks/bench_rebuild.py --quick      # < 3 min, counts + table
    python benchmarks/bench_rebuild.py --quick --standin-only  # CI: the counts, no real compile
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time

import _common
import rebuild_report
from _common import Run, Wrapper, clone, machine, ours_cmd, sconscript_phase, spec_paths, torchgen_cmd
from rebuild_counts import cold_problems, parse_report, problems
from rebuild_floors import Floors
from rebuild_scenarios import BY_NAME, QUICK_REAL, SCENARIOS, ExampleSpecs, Specs

SETTLE = {"seconds": 5.0}  # --settle: before each cold timed run


def timed(cmd: list[str], cwd: str = _common.REPO, settle: bool = False) -> Run:
    return _common.timed(cmd, cwd, SETTLE["seconds"] if settle else 0.0)


def scons(cwd: str, *args: str, settle: bool = False) -> Run:
    return _common.scons(cwd, *args, settle=SETTLE["seconds"] if settle else 0.0)


class Bench(Floors):
    def __init__(self, args):
        self.args, self.quick, self.jobs = args, args.quick, args.jobs
        self.work = args.workdir or tempfile.mkdtemp(prefix="bench_rebuild_")
        os.makedirs(self.work, exist_ok=True)
        self.t0 = time.perf_counter()
        self.failures: list[str] = []
        self.runs: dict = {s: {} for s in args.scenarios}   # scenario -> side -> [figures]
        self.floor: dict = {}
        self.trash: list[str] = []
        self.log(f"work folder {self.work}; load average {os.getloadavg()[0]:.2f}")

    def log(self, msg: str) -> None:
        print(f"[{time.perf_counter() - self.t0:7.1f} s] {msg}", flush=True)

    def record(self, scenario: str, side: str, **fig) -> None:
        self.runs[scenario].setdefault(side, []).append(fig)

    def fail(self, scenario: str, side: str, found: list[str], line: str) -> None:
        if found:
            msg = (f"cache-hit check failed: {side} / {BY_NAME[scenario].label}: " + "; ".join(found)
                   + f"\n    report: {line}")
            self.failures.append(msg)
            print("FAIL " + msg, flush=True)

    # -- setup -------------------------------------------------------------

    def setup(self) -> None:
        w, a = self.work, self.args
        self.specs = Specs(os.path.join(w, "specs"), spec_paths())
        self.wrapper = Wrapper(w, a.cxx)
        self.wrapper.set(real_pch=int(not a.standin_only))
        self.ours = os.path.join(w, "ours")
        if not os.path.exists(self.ours):
            clone(self.ours)
        self.sargs = ["SPECS=torch", f"TORCH_SPECS={self.specs.folder}", f"CXX={self.wrapper.path}",
                      f"PCH={int(a.pch)}", f"PYTHON={int(a.python)}"]
        self.empty = os.path.join(w, "empty")
        os.makedirs(self.empty, exist_ok=True)
        open(os.path.join(self.empty, "SConstruct"), "w").close()
        self.tg_root = os.path.join(w, "torchgen")
        self.tg_out = os.path.join(self.tg_root, "torch", "csrc", "autograd", "generated")
        os.makedirs(self.tg_out, exist_ok=True)

        self.example_specs = ExampleSpecs(self.ours)
        self.example_builds: dict = {}  # cold example scenario -> its build folder, for the edits after it
        if not any(BY_NAME[s].specs == "torch" for s in a.scenarios):
            # The example alone: its compile line (for the header parse), no torch tree.
            scons(self.ours, "BUILD=build-example", "generate")
            self.compile_cmd = self.command_of(os.path.join("build-example", "example", "gen", "unity",
                                                            "bucket_0.os"),
                                               [f"CXX={self.wrapper.path}", "BUILD=build-example"])
            if not a.standin_only:
                self.header_parse()
            return
        self.log("setup: generate (full tree and generate-only tree)")
        scons(self.ours, *self.sargs, "BUILD=build", "generate")
        os.makedirs(os.path.join(self.ours, "build-gen"), exist_ok=True)  # torch facts: asked once
        shutil.copy(os.path.join(self.ours, "build", ".torch.json"), os.path.join(self.ours, "build-gen"))
        scons(self.ours, *self.sargs, "BUILD=build-gen", "generate")
        gen = os.path.join("build", "torch", "gen")
        if a.pch:
            self.log("setup: precompiled prelude (real compile)")
            dry = scons(self.ours, *self.sargs, "BUILD=build", "-n").stdout
            shared = re.search(r"^Shared precompiled prelude: (\S+)$", dry, re.M)
            scons(self.ours, *self.sargs, "BUILD=build",
                  shared.group(1) if shared else os.path.join(gen, "prelude_pch.h.gch"))
            pch = [e for e in self.wrapper.take_log() if e["kind"] == "pch"]
            self.floor["pch_build_s"] = pch[0]["seconds"] if pch else None
        # Our TUs' exact command line (a bucket's: every generated TU has the same flags).
        self.compile_cmd = self.command_of(os.path.join(gen, "unity", "bucket_0.os"))
        if a.standin_only:
            self.standin_model()
        else:
            self.per_tu()
            self.header_parse()
        self.log("setup: the full graph up to date with stand-in objects ...")
        # Stand-ins are cheap processes: more of them at once than cores.
        out = scons(self.ours, *self.sargs, "BUILD=build", f"-j{max(4, 2 * self.jobs)}").stdout
        log = self.wrapper.take_log()
        links = [e for e in log if e["kind"] == "link"]
        self.floor["cold_link_s"] = links[-1]["seconds"] if links and links[-1]["real"] else None
        self.log(f"setup: {len([e for e in log if e['kind'] == 'compile'])} stand-in objects, library linked")
        self.n_functions = parse_report(out)["functions"]
        self.log("setup: torchgen's Functions.h/.cpp")
        self.torchgen(self.tg_out)

    # -- one side each -----------------------------------------------------

    def torchgen(self, out: str, settle: bool = False) -> Run:
        s = self.specs
        r = timed(torchgen_cmd(s.nf, s.tags, s.d, out, python=bool(self.args.python)), settle=settle)
        if r.returncode != 0:
            raise SystemExit(f"bench_rebuild: torchgen failed:\n{r.stderr[-3000:]}")
        return r

    def compile_functions_cpp(self, root: str) -> Run:
        """torchgen's job compiled with our TUs' compiler and flags (no PCH:
        torch's build uses none), at our -j: Functions.cpp, and with PYTHON=1
        the five python_functions shards beside it; its own headers first."""
        gen = os.path.join(root, "torch", "csrc", "autograd", "generated")
        srcs = ["Functions.cpp"] + ([f"python_functions_{k}.cpp" for k in range(5)] if self.args.python else [])
        cmds = [self.alone_cmd(self.plain_cmd, os.path.join(gen, f), os.path.join(root, f[:-4] + ".o"), [f"-I{root}"])
                for f in srcs]
        r = self.compile_parallel(cmds, self.jobs)
        self.log(f"  torchgen's {len(srcs)} TUs compiled at -j{self.jobs} in {r.wall:.1f} s wall, {r.cpu:.1f} s CPU")
        return r

    def torchgen_side(self, name: str, i: int, root: str | None = None) -> None:
        cold = root is not None
        root = root or self.tg_root
        out = os.path.join(root, "torch", "csrc", "autograd", "generated")
        os.makedirs(out, exist_ok=True)
        cpp = os.path.join(out, "Functions.cpp")
        before = open(cpp, "rb").read() if os.path.exists(cpp) else None
        r = self.torchgen(out, settle=cold)
        changed = open(cpp, "rb").read() != before
        comp = None
        if changed and not self.quick and (i < self.args.torchgen_compiles or BY_NAME[name].long):
            comp = self.compile_functions_cpp(root)
        self.record(name, "torchgen", wall=r.wall, cpu=r.cpu, rss_mib=r.rss_mib, changed=changed,
                    compile_s=comp and comp.wall, compile_cpu=comp and comp.cpu)
        self.log(f"  torchgen: {r.wall:.2f} s, Functions.cpp {'changed' if changed else 'unchanged'}")

    def fresh_build(self, build: str) -> None:
        """A new build folder, given the torch facts (their query is not what is measured)."""
        os.makedirs(os.path.join(self.ours, build), exist_ok=True)
        shutil.copy(os.path.join(self.ours, "build", ".torch.json"), os.path.join(self.ours, build))

    def ours_generate(self, name: str, build: str = "build-gen") -> None:
        sc = BY_NAME[name]
        if sc.cold:
            self.fresh_build(build)
        r = scons(self.ours, *self.sargs, f"BUILD={build}", "generate", settle=sc.cold)
        rep = parse_report(r.stdout)
        found = cold_problems(rep, None) if sc.cold else problems(sc.expect, rep, None)
        self.fail(name, "ours generate", found, rep["line"])
        self.record(name, "ours_generate", wall=r.wall, cpu=r.cpu, sconscript=sconscript_phase(r.stdout),
                    regenerated=rep["regenerated"], removed=rep["removed"])
        self.log(f"  ours scons generate: {r.wall:.2f} s")

    def ours_full(self, name: str, build: str = "build") -> None:
        sc, a = BY_NAME[name], self.args
        real = not a.standin_only and (sc.real == "always" or
                                       (sc.real == "quick" and (not self.quick or name in QUICK_REAL)))
        self.wrapper.set(mode="real" if real else "standin")
        self.wrapper.take_log()
        specs = self.sargs if sc.specs == "torch" else [f"CXX={self.wrapper.path}"]
        jobs = [f"-j{self.jobs}"] if sc.jobs == "bench" else []
        if sc.cold and sc.specs == "torch":  # (the example's cold build queries torch: a true cold build)
            self.fresh_build(build)
        # (the edit scenarios keep the layout the setup built: their counts assume it)
        unity = [f"UNITY={a.unity}"] if a.unity is not None and sc.specs == "torch" and sc.cold else []
        r = scons(self.ours, *specs, f"BUILD={build}", *jobs, *unity, *sc.scons_args, settle=sc.cold)
        log = self.wrapper.take_log()
        objs = [e for e in log if e["kind"] == "compile"]
        links = [e for e in log if e["kind"] == "link"]
        rep = parse_report(r.stdout)
        generated = len([e for e in objs if "/gen/" in e["out"]])  # not the extension's own C++
        found = cold_problems(rep, generated) if sc.cold else problems(sc.expect, rep, generated, sc.identical)
        self.fail(name, "ours generate + compile + relink", found, rep["line"])
        pch = [e["seconds"] for e in log if e["kind"] == "pch"]
        timed = objs + [e for e in log if e["kind"] == "pch"]   # the precompile is compiling too
        span = (max(e["start"] + e["seconds"] for e in timed) - min(e["start"] for e in timed)) if timed else 0.0
        fig = dict(wall=r.wall, cpu=r.cpu, sconscript=sconscript_phase(r.stdout), regenerated=rep["regenerated"],
                   removed=rep["removed"], compiled=len(objs), compile_real=real,
                   compile_s=[e["seconds"] for e in objs], compile_span_s=span,
                   # the compiler's own CPU per TU (user + sys, wait4), by object name
                   compile_cpu={os.path.basename(e["out"]): e.get("cpu") for e in objs},
                   pch_cpu=next((e.get("cpu") for e in log if e["kind"] == "pch"), None),
                   link_s=links[-1]["seconds"] if links else 0.0, link_real=bool(links and links[-1]["real"]),
                   pch_s=pch[0] if pch else None)
        self.record(name, "ours_full", **fig)
        self.log(f"  ours scons: {r.wall:.2f} s, {r.cpu:.1f} s CPU ({len(objs)} "
                 f"{'real' if real else 'stand-in'} compiles in {span:.1f} s; link {fig['link_s']:.2f} s)")

    def ours_cli(self, name: str, out: str) -> None:
        s = self.specs
        r = timed(ours_cmd(s.nf, s.tags, s.d, out), cwd=self.ours, settle=True)
        if r.returncode:
            raise SystemExit(f"bench_rebuild: python -m autograd_scons generate failed:\n{r.stderr}")
        self.record(name, "ours_cli", wall=r.wall, cpu=r.cpu, rss_mib=r.rss_mib)
        self.log(f"  ours python -m autograd_scons generate: {r.wall:.2f} s")

    def distcc(self, name: str, folder: str) -> None:
        """bench_distcc's cold build: wall time and the daemon's remote jobs."""
        import bench_distcc
        r = bench_distcc.measure("torch", self.args.unity or 16, 8, "-O2", folder, None)
        if not r["all_compiles_remote"] or r["returncode"] != 0:
            self.failures.append(f"{name}: not every compile ran on the distcc daemon: {r}")
        self.record(name, "distcc", wall=r["wall_s"], remote_jobs=r["remote_ok"], compiles=r["compiles"])
        self.log(f"  distcc: {r['wall_s']:.1f} s, {r['remote_ok']} of {r['compiles']} compiles remote")

    def empty_floor(self, name: str) -> None:
        r = scons(self.empty)
        self.record(name, "empty", wall=r.wall, cpu=r.cpu)

    # -- scenarios ---------------------------------------------------------

    def scenario(self, name: str, i: int) -> None:
        sc = BY_NAME[name]
        (self.example_specs if sc.specs == "example" else self.specs).apply(sc.edit, i)
        sides = [s for s in sc.sides if s != "torchgen" or not self.quick or sc.quick_torchgen]
        # Fresh folders for cold runs (deleting a big tree just before writing
        # another one slows the writes down on ext4: old ones go at the end).
        fresh = {"build": f"build-{name}-{i}", "tg": os.path.join(self.work, f"torchgen-{name}-{i}"),
                 "cli": os.path.join(self.work, f"cli-{name}-{i}")}
        if sc.cold:
            self.trash += [os.path.join(self.ours, fresh["build"]), fresh["tg"], fresh["cli"]]
        for side in sides if i % 2 == 0 else sides[::-1]:
            if side == "ours_generate":
                self.ours_generate(name, fresh["build"] if sc.cold else "build-gen")
            elif side == "ours_full":
                self.ours_full(name, self.build_folder(sc, fresh["build"]))
            elif side == "ours_cli":
                self.ours_cli(name, fresh["cli"])
            elif side == "torchgen":
                self.torchgen_side(name, i, fresh["tg"] if sc.cold else None)
            elif side == "empty":
                self.empty_floor(name)
            elif side == "distcc":
                self.distcc(name, os.path.join(self.work, f"distcc-{name}-{i}"))

    def build_folder(self, sc, fresh: str) -> str:
        """A cold run's fresh folder; an example edit's: its cold scenario's last one."""
        if sc.cold:
            self.example_builds[sc.name] = fresh
            return fresh
        if sc.after:
            if sc.after not in self.example_builds:
                raise SystemExit(f"bench_rebuild: scenario {sc.name} edits the build of {sc.after}: run both")
            return self.example_builds[sc.after]
        return "build"

    def run_all(self) -> None:
        self.setup()
        reps = 1 if self.quick else self.args.repeat
        for i in range(reps):
            if i and "header_parse_runs" in self.floor:
                self.header_parse()
            for name in self.args.scenarios:
                self.log(f"repetition {i + 1}/{reps}: {BY_NAME[name].label}")
                self.scenario(name, i)
        for p in self.trash:
            shutil.rmtree(p, ignore_errors=True)

    # -- results -----------------------------------------------------------

    def results(self) -> dict:
        res = rebuild_report.summarize_runs(self.runs, self.floor, getattr(self, "n_functions", None),
                                            self.jobs, self.args.pch)
        res["config"] = {"repeat": 1 if self.quick else self.args.repeat, "quick": self.quick, "jobs": self.jobs,
                         "pch": bool(self.args.pch), "unity": self.args.unity, "cxx": self.args.cxx,
                         "python": self.args.python,  # torchgen's job: Functions.cpp (+ 5 python_functions shards)
                         "torchgen_compiles": 0 if self.quick else self.args.torchgen_compiles,
                         "functions": getattr(self, "n_functions", None),
                         "compile_command": " ".join(getattr(self, "compile_cmd", [])),
                         "standin_only": self.args.standin_only, "settle_s": self.args.settle}
        res["machine_end"] = machine()
        res["failures"] = self.failures
        return rebuild_report.with_criteria(res)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring (benchmarks/bench_rebuild.py) for the method.")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions of each scenario (default %(default)s)")
    ap.add_argument("--out", metavar="DIR", help="write results.json, results.md and rebuild.png here (default: "
                    "print only with --quick, bench_rebuild_results/ otherwise)")
    ap.add_argument("--quick", action="store_true",
                    help="CI: one repetition, two real TU compiles, checks the cache-hit counts (< 3 min)")
    ap.add_argument("--workdir", metavar="DIR", help="work here and keep it (default: a temporary folder)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2,
                    help="parallel compiles of ours (default: %(default)s)")
    ap.add_argument("--unity", type=int, metavar="N", help="scons UNITY=N for the cold build of torch's specs "
                    "(default: the tool's default layout)")
    ap.add_argument("--torchgen-compiles", type=int, default=1, metavar="N",
                    help="compile torchgen's Functions.cpp on the first N repetitions of each scenario "
                    "(each takes minutes; default %(default)s)")
    ap.add_argument("--no-pch", dest="pch", action="store_false", help="ours without the precompiled prelude")
    ap.add_argument("--cxx", default="g++", help="the real compiler, e.g. clang++ (default %(default)s)")
    ap.add_argument("--python", type=int, choices=(0, 1), default=1,
                    help="1: ours with the Python bindings against torchgen's whole job (Functions.cpp and "
                    "python_functions_0..4.cpp); 0: PYTHON=0 against Functions.cpp alone (default %(default)s)")
    ap.add_argument("--settle", type=float, metavar="S",
                    help="before each cold timed run, wait S seconds after a sync (default 5, 1 with --quick)")
    ap.add_argument("--scenarios", help="comma-separated, of " + ", ".join(s.name + (" (long)" if s.long else "")
                                                                          for s in SCENARIOS)
                    + " (default: all but the long ones; with --quick: the quick ones)")
    ap.add_argument("--standin-only", action="store_true",
                    help="no real compile of ours at all (checks the counts only)")
    args = ap.parse_args(argv)
    if args.scenarios:
        args.scenarios = args.scenarios.split(",")
        bad = [s for s in args.scenarios if s not in BY_NAME]
        if bad:
            ap.error(f"unknown scenario(s): {', '.join(bad)}")
        args.scenarios = [s.name for s in SCENARIOS if s.name in args.scenarios]  # in table order
    else:
        args.scenarios = [s.name for s in SCENARIOS if not s.long and (s.quick or not args.quick)]
    if args.standin_only and not args.quick:
        ap.error("--standin-only is a --quick option")
    out = args.out or (None if args.quick else "bench_rebuild_results")
    if args.settle is None:
        args.settle = 1.0 if args.quick else 5.0
    SETTLE["seconds"] = args.settle

    start = machine()
    bench = Bench(args)
    try:
        bench.run_all()
        res = bench.results()
    finally:
        if not args.workdir:
            shutil.rmtree(bench.work, ignore_errors=True)
    res["machine_start"] = start
    res["command"] = "python benchmarks/bench_rebuild.py " + " ".join(argv if argv is not None else sys.argv[1:])
    res["seconds_total"] = time.perf_counter() - bench.t0
    print("\n" + rebuild_report.table(res))
    if out:
        rebuild_report.write(res, out)  # (a missing matplotlib skips the chart: not a failure)
    print(f"total {res['seconds_total']:.0f} s; load average at the end {res['machine_end']['loadavg'][0]:.2f}")
    if bench.failures:
        print(f"\nbench_rebuild: {len(bench.failures)} cache-hit check(s) failed:", file=sys.stderr)
        for f in bench.failures:
            print("  " + f, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
