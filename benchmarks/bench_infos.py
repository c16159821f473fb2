#!/usr/bin/env python3
"""Benchmark `python -m codegen infos` against torchgen's load_derivatives.

Each measurement runs in a fresh subprocess (cold start, like a build step).
The variants alternate within one run (ours, torchgen, floor, ours, ...) so
machine noise hits all of them alike. Wall time is measured around
Popen..wait4; peak RSS comes from the child's own rusage returned by
os.wait4 (getrusage(RUSAGE_CHILDREN) only gives the max over *all* children).

    python benchmarks/bench_infos.py --repeat 5 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from _common import run_once, spec_paths as real_spec_paths

# torchgen's cost of producing the infos: only load_derivatives, no JSON.
TORCHGEN_SNIPPET = """\
import sys
from torchgen.packaged.autograd.load_derivatives import load_derivatives
nf, tags, d = sys.argv[1:4]
infos, _ = load_derivatives(d, nf, tags)
assert infos
"""

# Floor: interpreter startup + the one third-party import both sides need.
FLOOR_SNIPPET = "import yaml"


def summarize(walls: list[float], rss: list[float]) -> dict:
    return {
        "runs": len(walls),
        "wall_median_s": statistics.median(walls),
        "wall_min_s": min(walls),
        "wall_max_s": max(walls),
        "peak_rss_mib": max(rss),
        "walls_s": walls,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per variant (default 5)")
    ap.add_argument("--native-functions", help="native_functions.yaml (default: torchgen's)")
    ap.add_argument("--tags", help="tags.yaml (default: torchgen's)")
    ap.add_argument("--derivatives", help="derivatives.yaml (default: torchgen's)")
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON here")
    args = ap.parse_args(argv)

    defaults = real_spec_paths()
    nf = args.native_functions or defaults[0]
    tags = args.tags or defaults[1]
    deriv = args.derivatives or defaults[2]
    nf, tags, deriv = (os.path.abspath(p) for p in (nf, tags, deriv))

    py = sys.executable
    variants = {
        "ours": [py, "-m", "codegen", "infos", "--native-functions", nf,
                 "--tags", tags, "--derivatives", deriv],
        "torchgen": [py, "-c", TORCHGEN_SNIPPET, nf, tags, deriv],
        "floor": [py, "-c", FLOOR_SNIPPET],
    }
    results: dict[str, dict] = {name: {"walls": [], "rss": []} for name in variants}
    failed: dict[str, str] = {}

    print(f"specs:\n  {nf}\n  {tags}\n  {deriv}")
    print(f"repeat={args.repeat}, alternating {', '.join(variants)}")
    for i in range(args.repeat):
        for name, cmd in variants.items():
            if name in failed:
                continue  # one clear error is enough; don't retry a broken variant
            wall, rss, rc, err = run_once(cmd)
            if rc != 0:
                failed[name] = f"exit code {rc}\n{err}"
                print(f"  [{i + 1}] {name:8s} FAILED (exit {rc})")
                continue
            results[name]["walls"].append(wall)
            results[name]["rss"].append(rss)
            print(f"  [{i + 1}] {name:8s} {wall:7.3f} s  {rss:7.1f} MiB")

    summary = {
        "specs": {"native_functions": nf, "tags": tags, "derivatives": deriv},
        "repeat": args.repeat,
        "results": {},
        "errors": failed,
    }
    print()
    print(f"{'variant':10s} {'median s':>9s} {'min s':>8s} {'max s':>8s} {'peak RSS MiB':>13s}")
    for name, r in results.items():
        if name in failed:
            continue
        s = summarize(r["walls"], r["rss"])
        summary["results"][name] = s
        print(f"{name:10s} {s['wall_median_s']:9.3f} {s['wall_min_s']:8.3f} "
              f"{s['wall_max_s']:8.3f} {s['peak_rss_mib']:13.1f}")

    res = summary["results"]
    if "ours" in res and "torchgen" in res:
        ratio = res["ours"]["wall_median_s"] / res["torchgen"]["wall_median_s"]
        summary["ratio_ours_over_torchgen"] = ratio
        print(f"\nratio ours/torchgen (median wall): {ratio:.3f}")
        if "floor" in res:
            fl = res["floor"]["wall_median_s"]
            o, t = res["ours"]["wall_median_s"] - fl, res["torchgen"]["wall_median_s"] - fl
            if t > 0:
                summary["ratio_above_floor"] = o / t
                print(f"ratio ours/torchgen above floor:    {o / t:.3f}")

    for name, err in failed.items():
        hint = ""
        if name == "ours":
            hint = " (does `python -m codegen infos` exist yet?)"
        print(f"\nERROR: {name} failed{hint}: {err}", file=sys.stderr)

    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
        print(f"\nwrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
