#!/usr/bin/env python3
"""A cold build compiled through distcc against a distccd on the loopback address.

    python benchmarks/bench_distcc.py [--specs torch] [--unity 16] [-j 8] [--json out.json]
    python benchmarks/bench_distcc.py --quick          # the example extension, 2 buckets

Starts distccd on 127.0.0.1 (a free port, --allow 127.0.0.1, --jobs J), then
runs, from this checkout into a fresh build folder,

    scons SPECS=<specs> UNITY=<n> PCH=0 -jJ LAUNCHER=distcc BUILD=<tmp>

with DISTCC_HOSTS=127.0.0.1:<port>/J and DISTCC_FALLBACK=0 (nothing may
compile locally), and reports the wall time, the compiles SCons ran, the jobs
distccd logged (COMPILE_OK or not) and their server-side times.  It exits 1
if the build fails or if any compile did not run on the daemon.  PCH=0:
distcc sends preprocessed text, so a precompiled header would not help the
remote side.

On one machine the "remote" daemon shares the local cores: this shows that
the plumbing works (every TU is a remote job), not a speed-up.  docs/benchmarks.md
("Distributed builds") turns the per-job times into estimates for clusters.
Needs Debian's distcc (`apt-get install distcc`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO, run  # noqa: E402
import _distccd  # noqa: E402


def compiled_sources(out: str) -> list[str]:
    """Basenames of the sources of the compile lines in a build log."""
    return sorted(os.path.basename(line.split()[-1]) for line in out.splitlines()
                  if re.search(r" -o \S+\.os? -c ", line))


def measure(specs: str, unity: int, jobs: int, opt: str, workdir: str, log_copy: str | None) -> dict:
    build = os.path.join(workdir, "build")
    args = [sys.executable, "-c", "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())",
            f"SPECS={specs}", f"UNITY={unity}", "PCH=0", f"OPT={opt}", f"-j{jobs}", "LAUNCHER=distcc",
            f"BUILD={build}"]
    with _distccd.loopback_distccd(jobs=jobs, keep_log=log_copy) as d:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOGRAD_", "DISTCC_", "SCONSFLAGS"))}
        env.update(d.client_env())
        print(f"+ DISTCC_HOSTS={d.hosts} DISTCC_FALLBACK=0 {' '.join(args[3:])}", flush=True)
        r = run(args, cwd=REPO, env=env)
        jobs_logged = d.compiles()
    sources = compiled_sources(r.stdout)
    ok_jobs = [(ms, src) for status, ms, src in jobs_logged if status == "COMPILE_OK"]
    remote = sorted(os.path.basename(src) for _, src in ok_jobs)
    times = [ms / 1000 for ms, _ in ok_jobs]
    result = {
        "command": " ".join(args[3:]), "specs": specs, "unity": unity, "jobs": jobs, "opt": opt,
        "returncode": r.returncode, "wall_s": round(r.wall, 2),
        "compiles": len(sources), "remote_jobs": len(jobs_logged), "remote_ok": len(ok_jobs),
        "remote_not_ok": sorted({s for s, _, _ in jobs_logged if s != "COMPILE_OK"}),
        "all_compiles_remote": remote == sources and len(sources) > 0,
        "job_s": {"sum": round(sum(times), 1), "median": round(statistics.median(times), 2) if times else None,
                  "max": round(max(times), 2) if times else None},
    }
    if r.returncode != 0:
        result["stderr_tail"] = r.stderr[-2000:]
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--specs", choices=("torch", "example"), default="torch",
                    help="torch: torch 2.13's 711 Functions (default); example: specs/")
    ap.add_argument("--unity", type=int, default=16, help="unity buckets (default 16)")
    ap.add_argument("-j", "--jobs", type=int, default=8, help="scons -j and distccd --jobs (default 8)")
    ap.add_argument("--opt", default="-O2", help="OPT= (default -O2)")
    ap.add_argument("--quick", action="store_true", help="the example extension, --unity 2 -j 2 -O0")
    ap.add_argument("--workdir", help="build here (kept) instead of a temporary folder (removed)")
    ap.add_argument("--log", help="copy distccd's log here")
    ap.add_argument("--json", help="write the result as JSON here")
    a = ap.parse_args(argv)
    if a.quick:
        a.specs, a.unity, a.jobs, a.opt = "example", 2, 2, "-O0"
    why = _distccd.missing()
    if why:
        print(f"bench_distcc: {why}", file=sys.stderr)
        return 2
    workdir = a.workdir or tempfile.mkdtemp(prefix="bench-distcc-")
    try:
        res = measure(a.specs, a.unity, a.jobs, a.opt, workdir, a.log)
    finally:
        if not a.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"| cold build, SPECS={res['specs']} UNITY={res['unity']} -j{res['jobs']} {res['opt']}, "
          f"distcc to 127.0.0.1 | wall {res['wall_s']} s | {res['compiles']} compiles | "
          f"{res['remote_ok']} remote jobs COMPILE_OK of {res['remote_jobs']} | server-side job time: "
          f"sum {res['job_s']['sum']} s, median {res['job_s']['median']} s, max {res['job_s']['max']} s |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    if res["returncode"] != 0:
        print(f"bench_distcc: the build failed (exit {res['returncode']}):\n{res.get('stderr_tail', '')}",
              file=sys.stderr)
        return 1
    if not res["all_compiles_remote"] or res["remote_not_ok"]:
        print("bench_distcc: not every compile ran on the daemon "
              f"({res['remote_ok']} COMPILE_OK for {res['compiles']} compiles; other: {res['remote_not_ok']})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
