"""Per-call overhead of the stable target's generated Python autograd
(issue 59) against the same op with the Python autograd written by hand
(torch.library.register_autograd, the torchvision/FA3 pattern), on small
tensors, side by side in one process.

    python benchmarks/bench_stable_python.py                 # 8 float32 elements, 7 rounds of 2000 calls
    python benchmarks/bench_stable_python.py --size 3 --number 5000

Two namespaces define the same two ops with the same CPU kernels (Python
compositions of aten ops, standing for a stable-ABI library's kernels:
their cost is the same on both sides): `bmul(self, other)` (its backward
reads the other input) and `myexp(self)` (it reads the output).
`bench_gen` gets the module autograd_scons generates from a
derivatives.yaml; `bench_hand` gets register_autograd with the same
formulas, saving the same tensors.  ATen's `torch.mul`/`torch.exp` are the
floor.  Scenarios per call: the forward without grad, the forward with an
input requiring grad, the forward and its backward (torch.autograd.grad).
Each round times `number` calls of every side in turn; medians over the
rounds, microseconds per call.  A benchmark, not a test: the figures go to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "site_scons"))

NATIVE = """\
- func: bench_gen::bmul(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: bmul
- func: bench_gen::myexp(Tensor self) -> Tensor
  dispatch:
    CPU: myexp
"""
DERIVATIVES = """\
- name: bmul(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self
  result: other_t * self_p + self_t * other_p
- name: myexp(Tensor self) -> Tensor
  self: grad * result
  result: self_t * result
"""
SCHEMAS = {"bmul": "bmul(Tensor self, Tensor other) -> Tensor", "myexp": "myexp(Tensor self) -> Tensor"}


def define(torch, namespace):
    lib = torch.library.Library(namespace, "DEF")
    for name, schema in SCHEMAS.items():
        lib.define(schema)
    lib.impl("bmul", lambda s, o: s * o, "CPU")
    lib.impl("myexp", lambda s: s.exp(), "CPU")
    return lib


def generated(torch, folder):
    from autograd_scons.codegen.engine.stable_python import render_stable_python
    for name, text in (("n.yaml", NATIVE), ("d.yaml", DERIVATIVES)):
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    files = render_stable_python(os.path.join(folder, "n.yaml"), os.path.join(folder, "d.yaml"), "bench_gen")
    for name, text in files.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    lib = define(torch, "bench_gen")
    spec = importlib.util.spec_from_file_location("bench_gen_autograd", os.path.join(folder, "bench_gen_autograd.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return lib, module


def hand_written(torch):
    """What a project writes by hand today: register_autograd, same formulas."""
    lib = define(torch, "bench_hand")

    def bmul_setup(ctx, inputs, output):
        s, o = inputs
        ctx.save_for_backward(s, o)

    def bmul_backward(ctx, grad):
        s, o = ctx.saved_tensors
        return (grad * o if ctx.needs_input_grad[0] else None, grad * s if ctx.needs_input_grad[1] else None)

    def myexp_setup(ctx, inputs, output):
        ctx.save_for_backward(output)

    def myexp_backward(ctx, grad):
        return grad * ctx.saved_tensors[0]

    torch.library.register_autograd("bench_hand::bmul", bmul_backward, setup_context=bmul_setup, lib=lib)
    torch.library.register_autograd("bench_hand::myexp", myexp_backward, setup_context=myexp_setup, lib=lib)
    return lib


def per_call(fn, number):
    t = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t) / number * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    keep = [generated(torch, tempfile.mkdtemp(prefix="bench_stable_python_")), hand_written(torch)]
    x, y = torch.randn(a.size), torch.randn(a.size)
    xg, yg = x.clone().requires_grad_(), y.clone().requires_grad_()
    sides = {"generated": torch.ops.bench_gen, "register_autograd": torch.ops.bench_hand,
             "ATen": type("aten", (), {"bmul": staticmethod(torch.mul), "myexp": staticmethod(torch.exp)})}

    def scenarios(ops):
        return {
            "bmul, no grad": lambda: ops.bmul(x, y),
            "bmul, input requires grad": lambda: ops.bmul(xg, yg),
            "bmul, forward + backward": lambda: torch.autograd.grad(ops.bmul(xg, yg), (xg, yg), y),
            "myexp, no grad": lambda: ops.myexp(x),
            "myexp, input requires grad": lambda: ops.myexp(xg),
            "myexp, forward + backward": lambda: torch.autograd.grad(ops.myexp(xg), (xg,), y),
        }
    table = {side: scenarios(ops) for side, ops in sides.items()}
    for side in table.values():        # warm-up
        for fn in side.values():
            per_call(fn, 100)
    times = {(side, s): [] for side in table for s in table[side]}
    for _ in range(a.rounds):
        for s in table["ATen"]:
            for side in table:
                times[(side, s)].append(per_call(table[side][s], a.number))
    print(f"# torch {torch.__version__}, {a.size} float32 elements, {a.rounds} rounds of {a.number} calls, "
          f"medians (us per call), load average {os.getloadavg()[0]:.1f}")
    print("| scenario | generated | register_autograd | generated / hand-written | ATen |")
    print("| --- | --- | --- | --- | --- |")
    for s in table["ATen"]:
        g, h, n = (statistics.median(times[(side, s)]) for side in ("generated", "register_autograd", "ATen"))
        print(f"| {s} | {g:.1f} | {h:.1f} | {g / h:.2f} | {n:.1f} |")
    del keep


if __name__ == "__main__":
    main()
