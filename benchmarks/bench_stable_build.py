"""Build times of the stable target against the C++ target, on the same four
ops (tests/fixtures/stable_ext: several inputs, a float argument, an
optional tensor, a reduction): cold, after a formula edit, after a kernel
edit.  The stable side is the fixture as it is (kernels on
torch::stable::Tensor, the autograd generated as Python); the C++ side is
its twin, the same yaml (less the stable target's `fake:` keys) with the
same kernels written against ATen, built by the C++ target (generated
Functions and Autograd kernels, unity buckets, no precompiled prelude).

    python benchmarks/bench_stable_build.py [--repeat N] [--opt -O1] [-j 2]

Each build is the checkout's `scons EXAMPLE=<copy> BUILD=<copy>/build` in a
fresh subprocess: wall seconds and CPU seconds (user + sys, compilers
included) of that run; the median of --repeat runs (cold builds start
from an empty build folder each time).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(REPO, "tests", "fixtures", "stable_ext")

CPP_SCONSCRIPT = """\
Import("env")
env = env.Clone()
functions = env.AutogradFunctions("gen", native_functions="native_functions.yaml",
                                  derivatives="derivatives.yaml", python=False,
                                  pch_sources=env.Glob("csrc/*.cpp", source=True))
ext = env.SharedLibrary("stableops_ext", functions, SHLIBPREFIX="")
Return("ext")
"""

# The stable fixture's kernels, against ATen (the C++ target's twin).
CPP_KERNELS = """\
#include <ATen/ATen.h>

namespace stableops::native {

at::Tensor mul_cpu(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.sizes() == other.sizes(), "stableops: float or double tensors only");
  return self * other;
}

at::Tensor scale_cpu(const at::Tensor& self, double alpha) { return self * alpha; }

at::Tensor shifted_cpu(const at::Tensor& self, const std::optional<at::Tensor>& shift) {
  return shift.has_value() ? self + *shift : self.clone();
}

at::Tensor sumsq_cpu(const at::Tensor& self) { return (self * self).sum(); }

}  // namespace stableops::native
"""

FORMULA_EDIT = ("self: grad * alpha", "self: alpha * grad")
KERNEL_EDIT = ("float or double tensors only", "float or double tensors, nothing else")


def project(where: str, target: str) -> str:
    folder = os.path.join(where, target)
    shutil.copytree(FIXTURE, folder)
    if target == "cpp":
        nf = os.path.join(folder, "native_functions.yaml")
        with open(nf) as f:
            text = re.sub(r"\n  fake: .*", "", f.read())
        with open(nf, "w") as f:
            f.write(text)
        d = os.path.join(folder, "derivatives.yaml")
        with open(d) as f:   # (torch's helper, FunctionsManual.h, is not what this compares)
            text = re.sub(r"handle_r_to_c\(self, (.*)\)", r"\1", f.read())
        with open(d, "w") as f:
            f.write(text)
        with open(os.path.join(folder, "SConscript"), "w") as f:
            f.write(CPP_SCONSCRIPT)
        with open(os.path.join(folder, "csrc", "kernels.cpp"), "w") as f:
            f.write(CPP_KERNELS)
        os.remove(os.path.join(folder, "stableops_fakes.py"))
    return folder


def build(folder: str, opt: str, jobs: int) -> tuple[float, float]:
    """(wall s, CPU s) of one scons run of the project `folder`."""
    cmd = [sys.executable, "-c", "import sys; from SCons.Script.Main import main; sys.exit(main())",
           f"EXAMPLE={folder}", f"BUILD={folder}/build", f"OPT={opt}", f"-j{jobs}", "-Q"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"scons failed in {folder}:\n{out[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def edit(path: str, old: str, new: str) -> None:
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace(old, new) if old in text else text.replace(new, old))


def measure(folder: str, opt: str, jobs: int, repeat: int) -> dict:
    runs: dict = {"cold": [], "formula edit": [], "kernel edit": []}
    for _ in range(repeat):
        shutil.rmtree(os.path.join(folder, "build"), ignore_errors=True)
        runs["cold"].append(build(folder, opt, jobs))
        edit(os.path.join(folder, "derivatives.yaml"), *FORMULA_EDIT)
        runs["formula edit"].append(build(folder, opt, jobs))
        edit(os.path.join(folder, "csrc", "kernels.cpp"), *KERNEL_EDIT)
        runs["kernel edit"].append(build(folder, opt, jobs))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--opt", default="-O1")
    p.add_argument("-j", type=int, default=2)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-stable-") as tmp:
        results = {t: measure(project(tmp, t), args.opt, args.j, args.repeat) for t in ("stable", "cpp")}
    load = os.getloadavg()[0]
    print(f"4 ops (tests/fixtures/stable_ext), OPT={args.opt} -j{args.j}, median of {args.repeat}, "
          f"load {load:.1f}: wall s / CPU s")
    print(f"{'scenario':<14} {'stable target':>16} {'C++ target':>16}")
    for scenario in results["stable"]:
        (sw, sc), (cw, cc) = results["stable"][scenario], results["cpp"][scenario]
        print(f"{scenario:<14} {sw:>7.2f} / {sc:>6.2f} {cw:>7.2f} / {cc:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
