"""load() against torch.utils.cpp_extension.load on the example (specs/).

    python benchmarks/bench_load.py            # both sides, medians of 3 (real compiles: ~15 min)
    python benchmarks/bench_load.py --quick    # CI: ours with the stand-in compiler, counts only
    python benchmarks/bench_load.py --edits [--cxx clang++]   # ours: first edit after a cold load() vs later ones

Each measurement is a fresh Python process that imports torch, then times
the load call alone: wall, and CPU (its own and its waited-for children's:
SCons or ninja and their compilers).  The sides get the same C++: ours
generates it (load()); for cpp_extension, which cannot generate,
`python -m autograd_scons generate` writes the same TUs (the layout from its
manifest) and cpp_extension.load(..., is_python_module=False) compiles them
with the hand-written kernels through ninja.  Scenarios, alternating the
sides each repetition:

  cold    an empty build folder (cpp_extension: the generate step included)
  no-op   a fresh process, nothing changed
  edit    one formula edited in derivatives.yaml (cpp_extension: regenerate,
          then load), alternately two versions of it

--quick checks what ours compiles (all on cold, nothing and no SCons on the
no-op, the edited Function's TU on the edit; the shared precompiled prelude
built once, by the first extension's first edit, and a second extension's
first edit compiling its edit TU alone) and exits non-zero when a count is
wrong; it needs no ninja.

--edits (ours alone, real compiler): a cold load() then 3 formula edits,
twice: with an empty `$AUTOGRAD_EXTENSIONS_DIR` (nobody has precompiled
the prelude for this torch, compiler and flags: the first edit does) and
then as a second extension beside the first (the prelude is found shared).
Wall and CPU of each step, and the first edit against the later ones.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from _common import REPO, machine

SPECS = os.path.join(REPO, "specs")
FORMULAS = ("self: grad * alpha", "self: alpha * grad")   # scale's backward, two ways
FAKE_CXX = f"sh {os.path.join(REPO, 'tests', 'support', 'fakecxx.sh')}"

# The child: import torch (not timed), then the load call, timed.
CHILD = """
import importlib.util, json, os, sys, time
site = os.path.join(sys.argv[1], "site_scons")
sys.path.insert(0, site)
sys.path.insert(0, sys.argv[1])
import torch
args = json.loads(sys.argv[3])
def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
w0, c0 = time.perf_counter(), cpu()
if sys.argv[2] == "ours":
    from autograd_scons import load
    ops = load(**args)
else:  # regenerate first when asked (cpp_extension cannot), then the layout's TUs
    generate, gen, kernels = args.pop("generate"), args.pop("gen"), args.pop("kernels")
    if generate:
        from autograd_scons.__main__ import main
        assert main(generate) == 0
    if "sources" not in args:
        from autograd_scons.codegen.engine.manifest import MANIFEST, read_manifest
        args["sources"] = [os.path.join(gen, r) for r in read_manifest(os.path.join(gen, MANIFEST))[0].sources]
        args["sources"].append(kernels)
    from torch.utils.cpp_extension import load
    load(**args)
    ops = torch.ops.myops
if os.environ.get("BENCH_LOAD_CHECK"):  # real libraries (not the stand-in's): the ops work
    assert ops.scale(torch.ones(2), 2.0).tolist() == [2.0, 2.0]
print("RESULT " + json.dumps({"wall": time.perf_counter() - w0, "cpu": cpu() - c0}))
"""


def child(side: str, args: dict, env: dict) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", CHILD, REPO, side, json.dumps(args)], capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{side} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):]), proc.stdout


def compiled(out: str) -> list:
    return sorted(os.path.basename(m) for m in re.findall(r"-o (\S+\.os?) -c ", out))


class Sides:
    def __init__(self, work: str, stand_in: bool):
        self.work, self.specs = work, os.path.join(work, "specs")
        shutil.copytree(SPECS, self.specs, ignore=shutil.ignore_patterns("python", "__pycache__"))
        self.derivatives = os.path.join(self.specs, "derivatives.yaml")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOGRAD_", "TORCH_EXTENSIONS"))}
        self.env["CXX"] = FAKE_CXX if stand_in else os.environ.get("CXX", "g++")
        # An empty home for the shared precompiled prelude: cold is cold.
        self.env["AUTOGRAD_EXTENSIONS_DIR"] = os.path.join(work, "extensions")
        self.env.setdefault("TORCH_NO_COMPILER_WRAPPER", "1")  # no sccache/ccache before cpp_extension's compiles
        if not stand_in:
            self.env["BENCH_LOAD_CHECK"] = "1"
        self.formula = 0

    def ours_args(self, folder: str) -> dict:
        s = self.specs
        return {"name": "myops", "native_functions": f"{s}/native_functions.yaml", "derivatives": self.derivatives,
                "sources": [f"{s}/csrc/kernels.cpp", f"{s}/csrc/kernels_cuda.cu"],
                "extra_include_paths": [f"{s}/include"], "includes": ["myops/backward_helpers.h"],
                "namespace": "myops::autograd", "build_directory": folder, "verbose": True}

    def theirs_args(self, folder: str, generate: bool) -> dict:
        """cpp_extension.load's arguments; `generate`: the child regenerates
        the TUs first and takes their list from the manifest."""
        gen = os.path.join(folder, "gen")
        s = self.specs
        args = {"name": "myops_ce", "extra_include_paths": [gen, f"{s}/include"],
                "extra_cflags": ["-O2", "-DAUTOGRAD_EXT_WITHOUT_CUDA_KERNELS"], "is_python_module": False,
                "build_directory": folder, "gen": gen, "kernels": f"{s}/csrc/kernels.cpp", "generate": None}
        if generate:
            args["generate"] = ["generate", "--native-functions", f"{s}/native_functions.yaml", "--derivatives",
                                self.derivatives, "--out", gen, "--namespace", "myops::autograd",
                                "--include", "myops/backward_helpers.h", "--quiet"]
        else:
            sys.path.insert(0, REPO)
            from autograd_scons.codegen.engine.manifest import MANIFEST, read_manifest
            manifest, _ = read_manifest(os.path.join(gen, MANIFEST))
            args["sources"] = [os.path.join(gen, r) for r in manifest.sources] + [args["kernels"]]
        return args

    def edit(self) -> None:
        with open(self.derivatives) as f:
            text = f.read()
        old, new = FORMULAS[self.formula], FORMULAS[1 - self.formula]
        with open(self.derivatives, "w") as f:
            f.write(text.replace(old, new, 1))
        self.formula = 1 - self.formula


def quick(work: str) -> int:
    sides = Sides(work, stand_in=True)
    args = sides.ours_args(os.path.join(work, "ours"))
    failures = []

    def expect(what, got, want):
        print(f"{what}: compiled {got}" + ("" if got == want else f"  EXPECTED {want}"))
        if got != want:
            failures.append(what)

    _, out = child("ours", args, sides.env)
    # (cache_key.os: the digest of the generated code, a TU with no header: codegen/emit/cache_key.py)
    expect("cold", compiled(out), ["bindings_0.os", "bucket_0.os", "cache_key.os", "kernels.os"])
    log = os.path.join(args["build_directory"], "build.log")
    stamp = os.stat(log).st_mtime_ns
    _, out = child("ours", args, sides.env)
    expect("no-op", compiled(out), [])
    if os.stat(log).st_mtime_ns != stamp:
        print("no-op: SCons ran  EXPECTED the stamp to decide without it")
        failures.append("no-op SCons")
    sides.edit()
    _, out = child("ours", args, sides.env)
    expect("edit", compiled(out), ["cache_key.os", "edited_0.os"])   # the edited Function in an edit TU, the digest
    expect("edit: precompiles of the shared prelude", len(precompiles(out)), 1)
    # A second extension (another build folder): its first edit finds the prelude.
    second = dict(args, build_directory=os.path.join(work, "second"))
    child("ours", second, sides.env)
    sides.edit()
    _, out = child("ours", second, sides.env)
    expect("second extension's first edit", compiled(out), ["cache_key.os", "edited_0.os"])
    expect("second extension's first edit: precompiles", len(precompiles(out)), 0)
    return 1 if failures else 0


def precompiles(out: str) -> list:
    return [x for x in out.splitlines() if " -x c++-header " in x]


def edits(work: str, n: int = 3) -> dict:
    """{"empty" | "shared": [cold, edit 1, ..., edit n] runs}: see --edits."""
    sides = Sides(work, stand_in=False)
    runs = {}
    for case in ("empty", "shared"):
        args = dict(sides.ours_args(os.path.join(work, case)), verbose=False)
        steps = [child("ours", args, sides.env)[0]]
        for _ in range(n):
            sides.edit()
            steps.append(child("ours", args, sides.env)[0])
        runs[case] = steps
        for i, r in enumerate(steps):
            print(f"  {case:6s} {'cold' if i == 0 else f'edit {i}':6s} {r['wall']:8.3f} s wall {r['cpu']:8.3f} s CPU",
                  flush=True)
    return runs


def edits_table(runs: dict) -> str:
    rows = ["| prelude at the cold load() | cold wall / CPU (s) | first edit wall / CPU (s) | "
            "later edits wall / CPU (s, median) | first / later (wall) |", "| --- | --- | --- | --- | --- |"]
    for case, steps in runs.items():
        cold, first, later = steps[0], steps[1], steps[2:]
        lw, lc = median(later, "wall"), median(later, "cpu")
        rows.append(f"| {'not built yet' if case == 'empty' else 'shared, built by another extension'} | "
                    f"{cold['wall']:.2f} / {cold['cpu']:.2f} | {first['wall']:.2f} / {first['cpu']:.2f} | "
                    f"{lw:.2f} / {lc:.2f} | {first['wall'] / lw:.2f}x |")
    return "\n".join(rows)


def median(runs: list, key: str) -> float:
    return statistics.median(r[key] for r in runs)


def full(work: str, repeat: int) -> dict:
    sides = Sides(work, stand_in=False)
    results = {s: {"cold": [], "no-op": [], "edit": []} for s in ("ours", "cpp_extension")}

    def measure(i, side, scenario, folder):
        if side == "ours":
            r = child("ours", dict(sides.ours_args(folder), verbose=False), sides.env)[0]
        else:  # cold and edit: (re)generate, then load; the no-op loads only
            os.makedirs(folder, exist_ok=True)
            r = child("cpp_extension", sides.theirs_args(folder, generate=scenario != "no-op"), sides.env)[0]
        results[side][scenario].append(r)
        print(f"  [{i + 1}/{repeat}] {side:13s} {scenario:5s} {r['wall']:8.3f} s wall {r['cpu']:8.3f} s CPU",
              flush=True)

    for i in range(repeat):  # alternating which side goes first
        order = ["ours", "cpp_extension"] if i % 2 == 0 else ["cpp_extension", "ours"]
        for scenario in ("cold", "no-op"):
            for side in order:
                measure(i, side, scenario, os.path.join(work, f"{side}-{i}"))
    for i in range(repeat):
        sides.edit()
        for side in (["ours", "cpp_extension"] if i % 2 == 0 else ["cpp_extension", "ours"]):
            measure(i, side, "edit", os.path.join(work, f"{side}-{repeat - 1}"))
    return results


GOALS = {"cold": ("<= 0.6x", 0.6), "no-op": ("<= 1.0x, <= 0.15 s", 1.0), "edit": ("<= 0.5x", 0.5)}


def table(results: dict) -> str:
    rows = ["| scenario | ours wall / CPU (s) | cpp_extension wall / CPU (s) | ratio (wall) | goal |",
            "| --- | --- | --- | --- | --- |"]
    for sc, (goal, _) in GOALS.items():
        o, t = results["ours"][sc], results["cpp_extension"][sc]
        rows.append(f"| {sc} | {median(o, 'wall'):.3f} / {median(o, 'cpu'):.3f} | "
                    f"{median(t, 'wall'):.3f} / {median(t, 'cpu'):.3f} | "
                    f"{median(o, 'wall') / median(t, 'wall'):.2f}x | {goal} |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="ours with the stand-in compiler: counts only")
    ap.add_argument("--edits", action="store_true", help="ours: the first edit after a cold load() against later ones")
    ap.add_argument("--cxx", default=None, help="the compiler (default: $CXX, else g++), e.g. clang++")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions (medians; default 3)")
    ap.add_argument("--out", default=None, help="write the results (JSON) and the table (Markdown) here")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench_load-")
    if args.cxx:
        os.environ["CXX"] = args.cxx
    try:
        if args.quick:
            return quick(work)
        if args.edits:
            print(f"load average before: {os.getloadavg()}; CXX={os.environ.get('CXX', 'g++')}", flush=True)
            text = edits_table(edits(work))
            print(text)
            print(f"load average after: {os.getloadavg()}")
            return 0
        if shutil.which("ninja") is None:
            raise SystemExit("cpp_extension needs ninja: pip install ninja (the test extra has it)")
        info = machine()
        print(f"load average before: {info['loadavg']}", flush=True)
        results = full(work, args.repeat)
        info["loadavg_after"] = os.getloadavg()
        text = table(results)
        print(text)
        print(f"load average after: {info['loadavg_after']}")
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "results.json"), "w") as f:
                json.dump({"machine": info, "results": results}, f, indent=1)
            with open(os.path.join(args.out, "table.md"), "w") as f:
                f.write(text + "\n")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
