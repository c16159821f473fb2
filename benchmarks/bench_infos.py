#!/usr/bin/env python3
"""Benchmark `python -m autograd_scons infos` against torchgen's load_derivatives.

Each measurement runs in a fresh subprocess (cold start, like a build step),
the variants alternating (ours, torchgen, floor, then the other way round)
so machine noise hits all of them alike; see benchmarks/_common.py for how
wall time and peak RSS are taken.  The commands are _common's, the same ones
bench_rebuild.py and bench_generate.py run.

    python benchmarks/bench_infos.py --repeat 5 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from _common import alternate, ours_cmd, spec_paths, summarize, torchgen_cmd

# Floor: interpreter startup + the one third-party import both sides need.
FLOOR = [sys.executable, "-c", "import yaml"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per variant (default 5)")
    ap.add_argument("--native-functions", help="native_functions.yaml (default: torchgen's)")
    ap.add_argument("--tags", help="tags.yaml (default: torchgen's)")
    ap.add_argument("--derivatives", help="derivatives.yaml (default: torchgen's)")
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON here")
    args = ap.parse_args(argv)

    defaults = spec_paths()
    paths = [os.path.abspath(given or default) for given, default in
             zip((args.native_functions, args.tags, args.derivatives), defaults)]
    variants = {"ours": ours_cmd(*paths), "torchgen": torchgen_cmd(*paths), "floor": FLOOR}
    print("specs:\n  " + "\n  ".join(paths))
    print(f"repeat={args.repeat}, alternating {', '.join(variants)}")
    runs = alternate(variants, args.repeat)

    failed = {name: rs[-1] for name, rs in runs.items() if rs and rs[-1].returncode}
    summary: dict = {"specs": dict(zip(("native_functions", "tags", "derivatives"), paths)),
                     "repeat": args.repeat, "results": {}, "errors": {}}
    print(f"\n{'variant':10s} {'median s':>9s} {'min s':>8s} {'max s':>8s} {'peak RSS MiB':>13s}")
    for name, rs in runs.items():
        if name in failed:
            summary["errors"][name] = f"exit code {failed[name].returncode}\n{failed[name].stderr[-2000:]}"
            continue
        s = dict(summarize([r.wall for r in rs]), peak_rss_mib=max(r.rss_mib for r in rs))
        summary["results"][name] = s
        print(f"{name:10s} {s['median']:9.3f} {s['min']:8.3f} {s['max']:8.3f} {s['peak_rss_mib']:13.1f}")

    res = summary["results"]
    if "ours" in res and "torchgen" in res:
        ratio = res["ours"]["median"] / res["torchgen"]["median"]
        summary["ratio_ours_over_torchgen"] = ratio
        print(f"\nratio ours/torchgen (median wall): {ratio:.3f}")
        if "floor" in res:
            fl = res["floor"]["median"]
            o, t = res["ours"]["median"] - fl, res["torchgen"]["median"] - fl
            if t > 0:
                summary["ratio_above_floor"] = o / t
                print(f"ratio ours/torchgen above floor:    {o / t:.3f}")
    for name, err in summary["errors"].items():
        print(f"\nERROR: {name} failed: {err}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
        print(f"\nwrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
