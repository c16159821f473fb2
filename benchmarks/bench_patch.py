"""The PyTorch developer's loop with `patch-torch`, against what a rebuild of
PyTorch costs for the same edit.

    python benchmarks/bench_patch.py [--repeat 3] [--out DIR]

In a temporary folder (its own $AUTOGRAD_EXTENSIONS_DIR, so the shared
precompiled prelude starts cold), with the compiler `$CXX` (default g++):

- cold: `patch-torch --all` over torch's unedited specs;
- then `--repeat` times, side by side in one run: one formula edited
  (`sin`'s, a new factor each time) in a copy of torch's derivatives.yaml,
  `patch-torch --all` again, and `run-patched` of `gradcheck(torch.sin)`;
  the same edit with `patch-torch` in its default mode (the edited
  Functions only) in a second folder;
- torchgen's side of the same edit: load_derivatives and
  gen_autograd_functions_lib (what a PyTorch build regenerates), then
  `Functions.cpp` compiled with the patch's own compiler and flags (no
  precompiled header, as torch's build): the floor of what rebuilding
  PyTorch costs for one formula, before its autograd kernels and link;
- the header parse: one TU of the patch's prelude alone (FunctionsManual.h,
  libtorch's Functions.h, ATen), compiled with the same command: the unit of
  CPU time the table is also given in;
- an edit that changes what a Function saves (`sin`'s formula on its
  `result`, a new factor each time), in the default-mode folder: the patch's
  own class and the Autograd kernels of `sin` and `sin_`, rebuilt, then
  `run-patched` of `gradcheck(torch.sin)`; beside it what a PyTorch rebuild
  recompiles for that edit: torchgen's Functions, VariableType and
  python_functions regenerated, and the shards holding `sin` compiled
  (`Functions.cpp`, the `VariableType_<k>.cpp` with sin's kernels, the
  `python_functions_<k>.cpp` with SinBackward0's Python type).

Each step reports wall and CPU seconds (user + sys of the process and its
children) and the objects compiled; the figures go to DIR/results.json and
a table on stdout (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import machine, spec_paths, summarize, torchgen_cmd  # noqa: E402
from rebuild_floors import without_prelude  # noqa: E402

SIN = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
GRADCHECK = ("import torch; x = torch.rand(8, dtype=torch.float64, requires_grad=True); "
             "print(torch.autograd.gradcheck(torch.sin, (x,), raise_exception=False))")
# (a member-changing edit: the grad_fn saves `result`; the factor makes gradcheck fail, seen)
GRADCHECK_MEMBER = GRADCHECK.replace("print(", "print(hasattr(torch.sin(x).grad_fn, '_saved_result'), ")
TORCHGEN_KERNELS = """\
import os, sys
import torchgen
from torchgen.api import cpp
from torchgen.api.autograd import match_differentiability_info
from torchgen.gen import parse_native_yaml
from torchgen.packaged.autograd.gen_variable_type import gen_variable_type
from torchgen.packaged.autograd.load_derivatives import load_derivatives
nf, tags, d, out = sys.argv[1:5]
infos, used_keys = load_derivatives(d, nf, tags)
fns = sorted(parse_native_yaml(nf, tags).native_functions, key=lambda f: cpp.name(f.func))
fns_with_infos = match_differentiability_info(fns, infos)
templates = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "autograd", "templates")
gen_variable_type(out, nf, tags, fns_with_infos, templates, used_keys)
"""


def member_edited(folder: str, k: int) -> str:
    """sin's formula on its result instead of its input (a new factor each time)."""
    nf, tags, d = spec_paths()
    with open(d, encoding="utf-8") as f:
        text = f.read()
    path = os.path.join(folder, "derivatives_member.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(SIN, SIN.replace("self.cos().conj()", f"result.asin().cos().conj() * {k + 2}")))
    return path


def shard_holding(folder: str, prefix: str, needle: str) -> str:
    """The generated `<prefix>_<k>.cpp` of `folder` whose text holds `needle`."""
    for name in sorted(os.listdir(folder)):
        if name.startswith(prefix + "_") and name.endswith(".cpp"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                if needle in f.read():
                    return os.path.join(folder, name)
    raise SystemExit(f"bench_patch: no {prefix}_*.cpp in {folder} holds {needle!r}")


def edited(folder: str, k: int) -> str:
    nf, tags, d = spec_paths()
    with open(d, encoding="utf-8") as f:
        text = f.read()
    assert text.count(SIN) == 1
    path = os.path.join(folder, "derivatives.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(SIN, SIN.replace("conj()", f"conj() * {k + 2}")))
    return path


def patch(env, out, *args):
    r = _common.run([sys.executable, "-m", "autograd_scons", "patch-torch", "-o", out, *args], env=env)
    if r.returncode:
        raise SystemExit(f"bench_patch: patch-torch failed:\n{r.stderr[-3000:]}")
    m = re.search(r"; (\d+) compiled$", r.stdout, re.M)
    return r, int(m.group(1)) if m else 0


def compile_command(folder: str) -> list[str]:
    """The command the patch's first bucket was compiled with (build.log),
    without the precompiled prelude."""
    with open(os.path.join(folder, "build.log")) as f:
        line = next(x for x in f if " -o gen/unity/bucket_0.os " in x)
    return without_prelude(shlex.split(line))


def alone(cmd: list[str], source: str, obj: str, includes=()) -> list[str]:
    """`cmd` compiling `source` to `obj` instead (`includes`: -I first)."""
    words = list(cmd)
    words[words.index("-o") + 1] = obj
    words[-1] = source
    return [words[0], *(f"-I{i}" for i in includes), *words[1:]]


def member(k: int, work: str, env: dict, edits: str, cmd: list, nf: str, tags: str, record) -> None:
    """The member-changing edit: the patch's loop, then PyTorch's regeneration
    and the compile of the three shards holding sin (the first time)."""
    d = member_edited(work, k)
    r, n = patch(env, edits, "--derivatives", d)
    record("member edit: patch-torch (own class, kernels of sin and sin_)", r, n)
    r = _common.run([sys.executable, "-m", "autograd_scons", "run-patched", edits, "--",
                     sys.executable, "-c", GRADCHECK_MEMBER], env=env)
    assert r.stdout.split()[-2:] == ["True", "False"], r.stdout + r.stderr   # its own class, its wrong formula
    record("member edit: run-patched gradcheck(torch.sin)", r)
    tg = os.path.join(work, "torchgen_member")
    gen = os.path.join(tg, "torch", "csrc", "autograd", "generated")
    os.makedirs(gen, exist_ok=True)
    r = _common.timed(torchgen_cmd(nf, tags, d, gen, python=True))
    assert r.returncode == 0, r.stderr[-2000:]
    kernels = _common.timed([sys.executable, "-c", TORCHGEN_KERNELS, nf, tags, d, gen])
    assert kernels.returncode == 0, kernels.stderr[-2000:]
    r.wall, r.cpu = r.wall + kernels.wall, r.cpu + kernels.cpu
    record("torchgen: regenerate Functions, VariableType, python_functions", r)
    if k:
        return
    for what, source in (("Functions.cpp", os.path.join(gen, "Functions.cpp")),
                         ("the VariableType shard with sin", shard_holding(gen, "VariableType", "SinBackward0")),
                         ("the python_functions shard with sin", shard_holding(gen, "python_functions",
                                                                               "SinBackward0"))):
        r = _common.timed(alone(cmd, source, os.path.join(work, "shard.o"), [tg]), cwd=edits)
        assert r.returncode == 0, r.stderr[-2000:]
        record(f"torchgen: compile {what}", r, 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None, help="keep the work folder and results.json here")
    args = ap.parse_args(argv)
    work = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="bench_patch_")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, AUTOGRAD_EXTENSIONS_DIR=os.path.join(work, "extensions"))
    every, edits = os.path.join(work, "all"), os.path.join(work, "edited")
    results = {"machine": machine(), "steps": {}}

    def record(name, r, objects=None):
        results["steps"].setdefault(name, []).append({"wall": r.wall, "cpu": r.cpu, "objects": objects})
        print(f"{name}: {r.wall:.2f} s wall, {r.cpu:.2f} s CPU" + (f", {objects} compiled" if objects is not None
                                                                   else ""), flush=True)

    r, n = patch(env, every, "--all")
    record("cold --all", r, n)
    r, n = patch(env, edits)
    record("cold, default mode (nothing edited)", r, n)
    cmd = compile_command(every)
    parse_src = os.path.join(work, "parse.cpp")
    with open(parse_src, "w") as f:
        f.write(f'#include "{os.path.join(every, "gen", "prelude_impl.h")}"\n')
    nf, tags, _ = spec_paths()
    tg = os.path.join(work, "torchgen")
    gen = os.path.join(tg, "torch", "csrc", "autograd", "generated")
    os.makedirs(gen, exist_ok=True)
    for k in range(args.repeat):
        d = edited(work, k)
        r, n = patch(env, every, "--all", "--derivatives", d)
        record("edit: patch-torch --all", r, n)
        r = _common.run([sys.executable, "-m", "autograd_scons", "run-patched", every, "--",
                         sys.executable, "-c", GRADCHECK], env=env)
        assert r.stdout.strip() == "False", r.stdout + r.stderr   # the edited formula is wrong: seen
        record("edit: run-patched gradcheck(torch.sin)", r)
        r, n = patch(env, edits, "--derivatives", d)
        record("edit: patch-torch (edited only)", r, n)
        r = _common.timed(torchgen_cmd(nf, tags, d, gen))
        record("torchgen: regenerate the Functions", r)
        if k == 0:
            r = _common.timed(alone(cmd, os.path.join(gen, "Functions.cpp"), os.path.join(work, "Functions.o"),
                                    [tg]), cwd=every)
            assert r.returncode == 0, r.stderr[-2000:]
            record("torchgen: compile Functions.cpp", r, 1)
        r = _common.timed(alone(cmd, parse_src, os.path.join(work, "parse.o")), cwd=every)
        assert r.returncode == 0, r.stderr[-2000:]
        record("header parse: the patch's prelude alone", r, 1)
        member(k, work, env, edits, cmd, nf, tags, record)
    results["summary"] = {name: {k: summarize([s[k] for s in runs]) for k in ("wall", "cpu")}
                          for name, runs in results["steps"].items()}
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    parse = results["summary"]["header parse: the patch's prelude alone"]["cpu"]["median"]
    print(f"\n| step | wall (s) | CPU (s) | CPU in header parses | objects compiled |\n| --- | --- | --- | --- | --- |")
    for name, runs in results["steps"].items():
        s = results["summary"][name]
        print(f"| {name} | {s['wall']['median']:.2f} | {s['cpu']['median']:.2f} | {s['cpu']['median'] / parse:.1f} "
              f"| {runs[0]['objects'] if runs[0]['objects'] is not None else '–'} |")
    print(f"\nmedians of {args.repeat}; load average {os.getloadavg()[0]:.1f} at the end "
          f"(at the start: {results['machine']['loadavg'][0]:.1f}); {work}")
    if not args.out:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
