"""The shared precompiled prelude's parts, per compiler: its precompile, and
one small TU compiled without it (a header parse of torch's prelude) and
against it.

    python benchmarks/bench_prelude.py                 # g++ and clang++ (those installed), medians of 3
    python benchmarks/bench_prelude.py --cxx clang++ --repeat 1

The prelude is the one the builds share (tool/pch_compilers.py: torch's
headers alone), compiled with torch's flags at -O2, GCC's without a flag of
its own, clang's with -fpch-instantiate-templates (and, as a column, without
it).  The TU is what a bucket's member costs past the prelude: one
function calling a few ATen ops.  CPU is user + sys of the compiler.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time



TU = """#include <ATen/ATen.h>
at::Tensor member(const at::Tensor& a, const at::Tensor& b) { return (a * b).sum(0) + a.mean() * b; }
"""


def flags() -> list[str]:
    import torch
    from torch.utils import cpp_extension
    paths = cpp_extension.include_paths() + [sysconfig.get_paths()["include"]]
    return ["-std=c++20", "-O2", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"] + \
        [w for p in paths for w in ("-isystem", p)]


def timed(cmd: list[str], cwd: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(cxx: str, work: str, repeat: int) -> dict:
    from autograd_scons.tool import pch_compilers as prelude
    fam = prelude.family(cxx)
    with open(os.path.join(work, "torch_prelude.h"), "w") as f:
        f.write(prelude.shared_text("// bench_prelude"))
    with open(os.path.join(work, "tu.cpp"), "w") as f:
        f.write(TU)
    base = [cxx] + flags()
    pch = "torch_prelude.h" + prelude.suffix(fam)
    steps = {"precompile": base + ["-x", "c++-header"] + prelude.precompile_flags(fam) + ["-c", "torch_prelude.h", "-o", pch],
             "TU without it": base + ["-c", "tu.cpp", "-o", "plain.o"],
             "TU against it": base + prelude.use_flags(fam, "torch_prelude.h") + ["-c", "tu.cpp", "-o", "pch.o"]}
    if fam == prelude.CLANG:  # the same precompile without keeping the instantiations
        steps["precompile, no -fpch-instantiate-templates"] = \
            base + ["-x", "c++-header", "-c", "torch_prelude.h", "-o", "plain" + pch]
        steps["TU against that"] = base + ["-include-pch", "plain" + pch, "-c", "tu.cpp", "-o", "pch2.o"]
    out = {}
    for name, cmd in steps.items():
        runs = [timed(cmd, work) for _ in range(repeat)]
        out[name] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        print(f"  {cxx} {name}: {out[name][0]:.2f} s wall, {out[name][1]:.2f} s CPU", flush=True)
    out["size MB"] = os.path.getsize(os.path.join(work, pch)) / 1e6
    return out


def table(results: dict) -> str:
    rows = ["| compiler | step | wall (s) | CPU (s) | CPU in TU-without parses |", "| --- | --- | --- | --- | --- |"]
    for cxx, r in results.items():
        parse = r["TU without it"][1]
        for name, v in r.items():
            if name != "size MB":
                rows.append(f"| {cxx} | {name} | {v[0]:.2f} | {v[1]:.2f} | {v[1] / parse:.2f} |")
        rows.append(f"| {cxx} | precompiled file | | | {r['size MB']:.0f} MB |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cxx", action="append", help="compiler (repeatable; default: g++ and clang++)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    compilers = [c for c in (args.cxx or ["g++", "clang++"]) if shutil.which(c)]
    print(f"load average before: {os.getloadavg()}", flush=True)
    results = {}
    for cxx in compilers:
        work = tempfile.mkdtemp(prefix="bench_prelude-")
        try:
            results[cxx] = measure(cxx, work, args.repeat)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(table(results))
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
