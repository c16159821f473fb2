"""vmap over a batch of a pointwise op declared `vmap: pointwise` (issue 53)
against functorch's fallback loop for the same op and against ATen's own
op, side by side in one process.

    python benchmarks/bench_vmap.py                  # batch 64, rows of 256 floats, 7 rounds
    python benchmarks/bench_vmap.py --size 4096 --build DIR    # DIR kept: a second run builds nothing

One extension (built by `autograd_scons.load_inline`) holds two ops with
one kernel, `self * other` (the same derivatives): `bench_vmap::rule`
declares `vmap: pointwise`, so it gets the generated plumbing and rule;
`bench_vmap::loop` declares nothing, so vmap runs functorch's fallback, a
loop over the batch (its warning turned off).  ATen's is `torch.mul`.
Each round times `number` calls of `vmap(op)(x, y)` on each side in turn
(x, y: float32 of shape (batch, size)): wall and this process's CPU time
per call, medians over the rounds.  Then one call of each under the
profiler: how many times the kernel ran (`aten::mul` events: the kernel
calls it once per run; ATen's side counts its own op) and how many times
the op was dispatched.  A benchmark, not a test: the figures go to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from _common import REPO, machine

NATIVE = """\
- func: bench_vmap::rule(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: mul_kernel
  vmap: pointwise

- func: bench_vmap::loop(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: mul_kernel
"""
DERIVATIVES = """\
- name: rule(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self

- name: loop(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self
"""
KERNEL = """\
#include <ATen/ATen.h>
#include "ops/bench_vmap_rule.h"
#include "ops/bench_vmap_loop.h"

namespace bench_vmap::native {
at::Tensor mul_kernel(const at::Tensor& self, const at::Tensor& other) { return self * other; }
}  // namespace bench_vmap::native
"""


def build(folder: str):
    sys.path.insert(0, os.path.join(REPO, "site_scons"))
    from autograd_scons import load_inline
    return load_inline("bench_vmap", native_functions=NATIVE, derivatives=DERIVATIVES, cpp_sources=KERNEL,
                       namespace="bench_vmap::autograd", build_directory=folder)


def per_call(fn, number: int) -> tuple[float, float]:
    """(wall, CPU) seconds per call of fn, over `number` calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(number):
        fn()
    return (time.perf_counter() - wall) / number, (time.process_time() - cpu) / number


def profiled(torch, fn) -> dict:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    counts: dict = {}
    for e in prof.events():
        counts[e.name] = counts.get(e.name, 0) + 1
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=7, help="rounds (each side once per round, alternating)")
    ap.add_argument("--number", type=int, default=200, help="calls per side per round")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch's intra-op threads (1: no OpenMP team spinning on a shared machine)")
    ap.add_argument("--build", help="the extension's build folder, kept (default: a temporary one)")
    args = ap.parse_args()
    import torch
    from torch.func import vmap
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench_vmap_") as tmp:
        start = time.perf_counter()
        ops = build(args.build or tmp)
        m = machine()
        print(f"built in {time.perf_counter() - start:.0f} s; load average {m['loadavg'][0]:.1f} on {m['cpus']} CPUs; "
              f"torch {torch.__version__}, {torch.get_num_threads()} threads")
        torch._C._functorch._set_vmap_fallback_warning_enabled(False)
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(args.batch, args.size, generator=g), torch.randn(args.batch, args.size, generator=g)
        sides = {"vmap: pointwise (generated plumbing)": vmap(ops.rule),
                 "no vmap: (functorch's fallback loop)": vmap(ops.loop),
                 "ATen's torch.mul": vmap(torch.mul)}
        want = x * y
        for name, f in sides.items():
            assert torch.equal(f(x, y), want), name
            per_call(lambda f=f: f(x, y), 20)   # warm up
        walls: dict = {name: [] for name in sides}
        cpus: dict = {name: [] for name in sides}
        for r in range(args.repeat):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for name in order:
                w, c = per_call(lambda f=sides[name]: f(x, y), args.number)
                walls[name].append(w)
                cpus[name].append(c)
        print(f"vmap over a batch of {args.batch} rows of {args.size} float32, {args.repeat} rounds of "
              f"{args.number} calls per side (medians per call)")
        base = statistics.median(walls["ATen's torch.mul"])
        print(f"{'side':40} {'wall us':>9} {'CPU us':>9} {'x ATen':>7} {'kernel runs':>12} {'op dispatches':>14}")
        for name, f in sides.items():
            counts = profiled(torch, lambda f=f: f(x, y))
            op = {"vmap: pointwise (generated plumbing)": "bench_vmap::rule",
                  "no vmap: (functorch's fallback loop)": "bench_vmap::loop"}.get(name, "aten::mul")
            kernel = counts.get("aten::mul", 0) if op != "aten::mul" else "-"
            w = statistics.median(walls[name])
            print(f"{name:40} {w * 1e6:9.1f} {statistics.median(cpus[name]) * 1e6:9.1f} {w / base:7.2f} "
                  f"{kernel!s:>12} {counts.get(op, 0):14}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
