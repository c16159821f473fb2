#!/usr/bin/env python3
"""Benchmark a cold full generation: ours against torchgen's, same specs.

ours:     `python -m autograd_scons generate` on torch's specs into a fresh folder
          (load + derive foreach infos + emit + write ~1,400 files).
torchgen: load_derivatives, match_differentiability_info (which adds the
          foreach infos, as gen_autograd does) and gen_autograd_functions_lib
          writing Functions.h/.cpp into a fresh folder.

Each run is a fresh subprocess (a build step starts cold), the two sides
alternate so machine noise hits both alike, and peak RSS is the child's own
(os.wait4).

    python benchmarks/bench_generate.py --repeat 5 [--tmp-dir DIR] [--json out.json]

Creating ~1,400 files costs what the filesystem makes it cost: on a
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


def commands(out: str) -> dict[str, list[str]]:
    """The two sides of bench_rebuild.py's cold generation scenario."""
    return {"ours": ours_cmd(*spec_paths(), out), "torchgen": torchgen_cmd(*spec_paths(), out)}


def run_once(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one fresh child; raises if it fails."""
    w, m, rc, err = _common.run_once(cmd)
    if rc != 0:
        raise SystemExit(f"{cmd[:4]} failed ({rc}):\n{err}")
    return w, m


def count_files(root: str) -> int:
    return sum(len(names) for _, _, names in os.walk(root))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per side (default: %(default)s)")
    ap.add_argument("--tmp-dir", metavar="DIR", default=None,
                    help="where the fresh output folders are made (default: the system temp dir)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args(argv)

    walls: dict[str, list[float]] = {"ours": [], "torchgen": []}
    rss: dict[str, list[float]] = {"ours": [], "torchgen": []}
    files: dict[str, int] = {}
    for i in range(args.repeat):
        for side in ("ours", "torchgen") if i % 2 == 0 else ("torchgen", "ours"):
            out = tempfile.mkdtemp(prefix=f"bench_{side}_", dir=args.tmp_dir)
            try:
                w, m = run_once(commands(out)[side])
                files[side] = count_files(out)
            finally:
                shutil.rmtree(out, ignore_errors=True)
            walls[side].append(w)
            rss[side].append(m)
            print(f"run {i + 1}/{args.repeat} {side:8s} {w:6.2f} s  {m:6.0f} MiB", file=sys.stderr)

    report = {}
    print(f"{'':9s}{'median':>9s}{'min':>9s}{'max':>9s}{'peak RSS':>11s}{'files':>7s}")
    for side in ("ours", "torchgen"):
        ws = walls[side]
        report[side] = {"median_s": statistics.median(ws), "min_s": min(ws), "max_s": max(ws),
                        "peak_rss_mib": max(rss[side]), "files": files[side], "walls_s": ws}
        r = report[side]
        print(f"{side:9s}{r['median_s']:8.2f}s{r['min_s']:8.2f}s{r['max_s']:8.2f}s"
              f"{r['peak_rss_mib']:8.0f} MiB{r['files']:7d}")
    ratio = report["ours"]["median_s"] / report["torchgen"]["median_s"]
    report["ratio"] = ratio
    print(f"ours / torchgen (medians): {ratio:.3f}  (target <= 0.25); output folders in "
          f"{args.tmp_dir or tempfile.gettempdir()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
