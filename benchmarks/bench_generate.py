#!/usr/bin/env python3
"""Benchmark a cold full generation: ours against torchgen's same job, same specs.

ours:      `python -m autograd_scons generate` on torch's specs into a fresh
           folder (load + derive foreach infos + emit + write ~1,450 files),
           with the Python bindings (the default; --python 0: without).
ours_scons (--scons): the same through `scons SPECS=torch generate`, from a
           copy of this checkout, into a fresh build folder (the torch facts,
           `.torch.json`, asked once beforehand: their query is not measured).
before     (--baseline DIR): `python -m autograd_scons generate` of another
           checkout (its site_scons/ imported first), for a before/after in
           one run.
torchgen:  what torch's build generates for the autograd Functions:
           load_derivatives, match_differentiability_info (which adds the
           foreach infos, as gen_autograd does), gen_autograd_functions_lib
           (Functions.h/.cpp) and gen_autograd_functions_python
           (python_functions.h, python_functions_0..4.cpp), into a fresh
           folder (--python 0: the lib alone).

Each run is a fresh subprocess (a build step starts cold); the sides
alternate so machine noise hits all alike.  Per side: wall time, CPU (user +
sys of the child and every descendant it waited for, from os.wait4) and the
child's peak RSS; the ratios are ours / torchgen of the medians.  The load
averages at the start and the end are printed and kept in the JSON.

    python benchmarks/bench_generate.py --repeat 5 [--scons] [--baseline DIR] [--json out.json]

Creating ~1,450 files costs what the filesystem makes it cost: on a
contended or watched disk it can dominate ours; --tmp-dir /dev/shm (tmpfs)
shows the generator's own time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

import _common
from _common import ours_cmd, spec_paths, torchgen_cmd

GOAL = 0.5  # issue 37: ours at most half of torchgen's same job


def count_files(root: str) -> int:
    return sum(len(names) for _, _, names in os.walk(root))


class Sides:
    """The command and environment of each side, given a fresh output folder."""

    def __init__(self, args, work: str):
        self.python, self.work = bool(args.python), work
        self.names = ["ours", "torchgen"]
        if args.baseline:
            # `autograd_scons` from the other checkout: a folder holding just
            # that name, first on the path (the editable install comes after).
            shim = os.path.join(work, "baseline-path")
            os.makedirs(shim)
            base = os.path.abspath(args.baseline)
            if os.path.isdir(os.path.join(base, "site_scons", "autograd_scons")):
                shim = os.path.join(base, "site_scons")
            else:   # a checkout from before site_scons/autograd_scons/
                os.symlink(os.path.join(base, "site_scons"), os.path.join(shim, "autograd_scons"))
            self.baseline_env = {**os.environ, "PYTHONPATH": shim}
            self.names.insert(1, "before")
        if args.scons:
            self.clone = _common.clone(os.path.join(work, "ours"))
            facts = os.path.join(work, "facts")
            # (a first generate asks torch for its facts, kept in .torch.json)
            _common.scons(self.clone, *self.scons_args(facts), "generate")
            self.facts = os.path.join(facts, ".torch.json")
            self.names.insert(1, "ours_scons")

    def scons_args(self, build: str) -> list[str]:
        return ["SPECS=torch", f"BUILD={build}", f"PYTHON={int(self.python)}"]

    def run(self, side: str, out: str) -> tuple[_common.Run, str]:
        """One fresh run of `side` into `out`; (the run, the generated folder)."""
        if side == "ours_scons":
            shutil.copy(self.facts, out)
            return _common.scons(self.clone, *self.scons_args(out), "generate", check=False), \
                os.path.join(out, "torch", "gen")
        if side == "torchgen":
            cmd = torchgen_cmd(*spec_paths(), out, python=self.python)
        else:
            cmd = ours_cmd(*spec_paths(), out) + ([] if self.python else ["--no-python"])
        return _common.run(cmd, env=self.baseline_env if side == "before" else None), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per side (default: %(default)s)")
    ap.add_argument("--python", type=int, choices=(0, 1), default=1,
                    help="1: ours with the Python bindings against gen_autograd_functions_lib and _python; "
                    "0: ours --no-python against the lib alone (default %(default)s)")
    ap.add_argument("--scons", action="store_true", help="also ours through `scons SPECS=torch generate`")
    ap.add_argument("--baseline", metavar="DIR", help="also another checkout's generator (e.g. main's)")
    ap.add_argument("--tmp-dir", metavar="DIR", default=None,
                    help="where the fresh output folders are made (default: the system temp dir)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args(argv)

    start = os.getloadavg()
    work = tempfile.mkdtemp(prefix="bench_generate_", dir=args.tmp_dir)
    try:
        sides = Sides(args, work)
        runs = measure(sides, args.repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = summary(runs, sides.names)
    report.update(loadavg_start=start, loadavg_end=os.getloadavg(), cpus=os.cpu_count(), python=args.python,
                  command="python benchmarks/bench_generate.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print_report(report, sides.names)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


def measure(sides: Sides, repeat: int, work: str) -> dict[str, list[tuple[float, float, float, int]]]:
    """(wall, cpu, peak RSS MiB, files) per run of each side."""
    runs: dict[str, list] = {n: [] for n in sides.names}
    for i in range(repeat):
        for side in sides.names if i % 2 == 0 else sides.names[::-1]:
            out = tempfile.mkdtemp(prefix=f"{side}_", dir=work)
            try:
                os.sync()  # (the writeback of the last side's files must not land on this one)
                r, generated = sides.run(side, out)
                if r.returncode != 0:
                    raise SystemExit(f"{side} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
                files = count_files(generated)
            finally:
                shutil.rmtree(out, ignore_errors=True)
            runs[side].append((r.wall, r.cpu, r.rss_mib, files))
            print(f"run {i + 1}/{repeat} {side:10s} {r.wall:6.2f} s  CPU {r.cpu:5.2f} s  {r.rss_mib:5.0f} MiB",
                  file=sys.stderr)
    return runs


def summary(runs: dict, names: list[str]) -> dict:
    report: dict = {"sides": {}}
    for side in names:
        walls, cpus = [r[0] for r in runs[side]], [r[1] for r in runs[side]]
        report["sides"][side] = {"wall": _common.summarize(walls), "cpu": _common.summarize(cpus),
                                 "peak_rss_mib": max(r[2] for r in runs[side]), "files": runs[side][-1][3]}
    tg = report["sides"]["torchgen"]
    report["ratios"] = {side: {what: report["sides"][side][what]["median"] / tg[what]["median"]
                               for what in ("wall", "cpu")} for side in names if side != "torchgen"}
    return report


def print_report(report: dict, names: list[str]) -> None:
    print(f"load average {report['loadavg_start'][0]:.2f} at the start, {report['loadavg_end'][0]:.2f} "
          f"at the end, {report['cpus']} CPUs")
    print(f"{'':11s}{'wall median':>12s}{'(min-max)':>14s}{'CPU median':>12s}{'(min-max)':>14s}"
          f"{'peak RSS':>10s}{'files':>7s}{'wall/tg':>9s}{'CPU/tg':>8s}")
    for side in names:
        s, ratio = report["sides"][side], report["ratios"].get(side)
        w, c = s["wall"], s["cpu"]
        print(f"{side:11s}{w['median']:11.2f}s{w['min']:7.2f}-{w['max']:5.2f}s{c['median']:11.2f}s"
              f"{c['min']:7.2f}-{c['max']:5.2f}s{s['peak_rss_mib']:6.0f} MiB{s['files']:7d}"
              + (f"{ratio['wall']:8.2f}x{ratio['cpu']:7.2f}x" if ratio else f"{'-':>9s}{'-':>8s}"))
    print(f"goal: ours / torchgen's same job <= {GOAL}x")


if __name__ == "__main__":
    sys.exit(main())
