#!/usr/bin/env python3
"""What an edit costs: ours (scons + the tool) against torchgen, on torch's specs.

On temporary copies of torch 2.13's own specs (711 Functions), one run takes
these scenarios side by side, each repeated (medians, min and max):

  cold generation   nothing generated yet
  no-op             nothing changed
  1 formula         one derivatives formula edited
  10 formulas       ten formulas of ten entries edited
  1 native schema   one native function's schema edited (and its derivatives
                    entry's name with it): two Functions match it
  1 entry removed   one derivatives entry deleted
  1 entry added     one derivatives entry added (the one just removed)

and for each, on the same edited files:

  ours, generate    `scons SPECS=torch generate`: the tool regenerates;
  ours, full        `scons SPECS=torch -jN`: the tool regenerates, SCons
                    recompiles the changed per-op TUs (precompiled prelude)
                    and relinks the library;
  torchgen          load_derivatives + gen_autograd_functions_lib (which
                    rewrites only files whose contents changed), then, when
                    Functions.cpp changed, compiling it with the same
                    compiler and flags as our TUs;
  floor             an empty SConstruct's `scons`; one per-op TU's compile
                    (with and without the precompiled prelude).

Compiling all 711 TUs once (hours on 2 cores) is avoided: SCons is given one
compiler command for the whole run, benchmarks/_cxxwrap.py, which either
compiles for real or writes a stand-in object, as a control file that SCons
does not see says.  SCons signs objects by command line and compiler bytes,
both fixed, so what it decides to rebuild is exactly what it would decide
with g++; only what lands in the objects differs.  The graph is brought up
to date with stand-ins (copies of one real per-op object with renamed
symbols, so the relink links 711 real-sized ELF objects), then every
measured build compiles what it rebuilds for real.  The cold full build is
therefore an estimate (711 x the per-TU time / jobs), said so in the table.
torchgen's Functions.cpp (one 2.5 MB TU) is compiled for real, on the first
--torchgen-compiles repetitions of each scenario.

Every run of ours is checked: the tool's report and the compiler log must
show exactly the expected Functions regenerated (none re-rendered
identically: that would be a key miss), removed and recompiled; a miscount
fails the run (exit 1).

    python benchmarks/bench_rebuild.py [--repeat 5] [--out DIR]
    python benchmarks/bench_rebuild.py --quick      # CI: < 3 min, counts + table

--quick: one repetition; the PCH and two TUs (the per-TU floor and the one
formula edit) are compiled for real, every other compile is a stand-in, and
torchgen's Functions.cpp is not compiled.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import _common
from _common import REPO, TORCHGEN, run, spec_paths, summarize

sys.path.insert(0, os.path.join(REPO, "tests"))
from scons_helpers import clone  # noqa: E402

# ------------------------------------------------------------- the edits
# Chosen so that each touches exactly the Functions named (no foreach or
# view_copy Function derives from them, no renumbering): checked on every run.

FORMULA_1 = ["logcumsumexp(Tensor self, int dim) -> Tensor"]
FORMULA_10 = [
    "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
    "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
    "diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor",
    "special_erfcx(Tensor self) -> Tensor",
    "erfinv(Tensor self) -> Tensor",
    "hardsigmoid(Tensor self) -> Tensor",
    "hardswish(Tensor self) -> Tensor",
    "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
    "linalg_matrix_exp(Tensor self) -> Tensor",
    "mvlgamma(Tensor self, int p) -> Tensor",
]
# Its derivatives entry has a Default and an AutogradNestedTensor formula:
# SumBackward1 and SumBackwardAutogradNestedTensor1.
SCHEMA = "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
SCHEMA_FUNCTIONS = 2
# Removed one per repetition, then added back by the next scenario.
REMOVE = [
    "special_i1(Tensor self) -> Tensor",
    "special_i1e(Tensor self) -> Tensor",
    "rad2deg(Tensor self) -> Tensor",
    "deg2rad(Tensor self) -> Tensor",
    "sinc(Tensor self) -> Tensor",
    "trace(Tensor self) -> Tensor",
    "flip(Tensor self, int[] dims) -> Tensor",
    "rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor",
    "special_entr(Tensor self) -> Tensor",
    "renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor",
]
TEMPLATE_OP = "MulBackward0"   # the per-TU floor, and the stand-ins' model

SCENARIOS = ["cold", "noop", "formula1", "formula10", "schema", "remove", "add"]
LABELS = {"cold": "cold generation", "noop": "no-op", "formula1": "1 formula edited",
          "formula10": "10 formulas edited", "schema": "1 native schema edited",
          "remove": "1 entry removed", "add": "1 entry added"}
# scenario -> (Functions regenerated, removed, objects recompiled)
EXPECT = {"noop": (0, 0, 0), "formula1": (1, 0, 1), "formula10": (10, 0, 10),
          "schema": (SCHEMA_FUNCTIONS, 0, SCHEMA_FUNCTIONS), "remove": (0, 1, 0), "add": (1, 0, 1)}
# --quick runs torchgen's generation in these scenarios only.
QUICK_TORCHGEN = ("cold", "noop", "formula1")
# Edited entries, for the chart's x axis.
EDITED = {"noop": 0, "formula1": 1, "formula10": 10, "schema": 1, "remove": 1, "add": 1}

# For tests only: salt this Function's key in every scons run (a deliberately
# broken cache key), to show that a miss where a hit is due fails the run.
BREAK_KEY_ENV = "BENCH_REBUILD_BREAK_KEY"
_BREAK_PRELUDE = """
import dataclasses, os, sys
sys.path.insert(0, {repo!r})  # the checkout whose tool SCons loads
from codegen import incremental
_op_key, _salted = incremental.op_key, {op!r}
def op_key(info, options, generator):
    k = _op_key(info, options, generator)
    return dataclasses.replace(k, key=k.key + os.urandom(8).hex()) if k.op == _salted else k
incremental.op_key = op_key
"""


class Miscount(Exception):
    pass


# ------------------------------------------------------------ spec edits


class Specs:
    """The temporary copies of the three yaml files, and the edits."""

    def __init__(self, folder: str):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        for src in spec_paths():
            shutil.copy(src, folder)
        self.nf = os.path.join(folder, "native_functions.yaml")
        self.d = os.path.join(folder, "derivatives.yaml")
        self.tags = os.path.join(folder, "tags.yaml")
        with open(self.d) as f:
            pristine = f.read()
        self.entries = {}  # schema -> its pristine entry text (up to the next one)
        for chunk in re.split(r"\n(?=- name: )", pristine):
            if chunk.startswith("- name: "):
                self.entries[chunk.split("\n", 1)[0][len("- name: "):]] = chunk.rstrip("\n") + "\n"
        for s in FORMULA_1 + FORMULA_10 + [SCHEMA] + REMOVE:
            if s not in self.entries:
                raise SystemExit(f"bench_rebuild: no derivatives entry '{s}' in {spec_paths()[2]}")

    def _sub(self, path: str, old: str, new: str) -> None:
        with open(path) as f:
            text = f.read()
        if text.count(old) != 1:
            raise SystemExit(f"bench_rebuild: expected one {old[:60]!r}... in {path}")
        with open(path, "w") as f:
            f.write(text.replace(old, new))

    def _current(self, schema: str) -> str:
        """The entry's current text (from its `- name:` line to the next entry)."""
        with open(self.d) as f:
            text = f.read()
        m = re.search(r"^- name: " + re.escape(schema) + r"\n(?:(?!- name: ).*\n)*", text, re.M)
        if m is None:
            raise SystemExit(f"bench_rebuild: entry '{schema}' not in {self.d}")
        return m.group(0)

    def edit_formulas(self, schemas: list[str], factor: int) -> None:
        """`self: F` becomes `self: (F) * factor` (a new factor each time)."""
        for s in schemas:
            pristine = self.entries[s]
            line = next(ln for ln in pristine.split("\n") if ln.startswith("  self: "))
            new = pristine.replace(line, f"  self: ({line[len('  self: '):]}) * {factor}", 1)
            self._sub(self.d, self._current(s), new)

    def edit_schema(self, n: int) -> None:
        """A new defaulted keyword argument (a new name each time) in the
        native function, in its out= overload (torchgen requires the two to
        agree) and in the name of its derivatives entry."""
        with open(self.nf) as f:
            text = f.read()
        new = SCHEMA.replace(") -> Tensor", f", bool bench_{n}=False) -> Tensor")
        for func, after in ((r"sum\.dim_IntList\(", new), (r"sum\.IntList_out\(", None)):
            line = re.search(r"^- func: " + func + r".*$", text, re.M).group(0)
            if after is None:  # ..., ScalarType? dtype=None[, bool bench_k=False], Tensor(a!) out)
                after = re.sub(r"(, bool bench_\d+=False)?, Tensor\(a!\) out\)",
                               f", bool bench_{n}=False, Tensor(a!) out)", line[len("- func: "):])
            text = text.replace(line, f"- func: {after}", 1)
        with open(self.nf, "w") as f:
            f.write(text)
        cur = self._current_by_prefix("sum.dim_IntList(")
        self._sub(self.d, cur, cur.replace(cur.split("\n", 1)[0], f"- name: {new}", 1))

    def _current_by_prefix(self, prefix: str) -> str:
        with open(self.d) as f:
            text = f.read()
        m = re.search(r"^- name: " + re.escape(prefix) + r".*\n(?:(?!- name: ).*\n)*", text, re.M)
        return m.group(0)

    def remove(self, schema: str) -> None:
        cur = self._current(schema)
        with open(self.d) as f:
            text = f.read()
        self.removed = (schema, text.index(cur), cur)
        self._sub(self.d, cur, "")

    def add_back(self) -> None:
        schema, at, cur = self.removed
        with open(self.d) as f:
            text = f.read()
        with open(self.d, "w") as f:
            f.write(text[:at] + cur + text[at:])


# ----------------------------------------------------------------- tools


def objects_in(log_lines: list[dict]) -> list[dict]:
    return [e for e in log_lines if e["kind"] == "compile"]


class Wrapper:
    """benchmarks/_cxxwrap.py installed in the work folder, and its controls."""

    def __init__(self, work: str, cxx: str):
        os.makedirs(os.path.join(work, "bin"), exist_ok=True)
        with open(os.path.join(REPO, "benchmarks", "_cxxwrap.py")) as f:
            self.path = _common.python_executable_script(os.path.join(work, "bin", "cxx"), f.read())
        self.log = os.path.join(work, "cxx.log")
        self.cfg = {"cxx": cxx, "mode": "standin", "template": None, "log": self.log}
        self._write()

    def _write(self) -> None:
        with open(self.path + ".cfg", "w") as f:
            f.write("".join(f"{k}={'' if v is None else v}\n" for k, v in self.cfg.items()))

    def set(self, **kw) -> None:
        self.cfg.update(kw)
        self._write()

    def take_log(self) -> list[dict]:
        try:
            with open(self.log) as f:
                lines = [json.loads(x) for x in f if x.strip()]
        except FileNotFoundError:
            return []
        os.unlink(self.log)
        return lines


def scons_cmd(cwd: str, args: list[str]) -> list[str]:
    op = os.environ.get(BREAK_KEY_ENV)
    if op:
        prelude = _BREAK_PRELUDE.format(repo=cwd, op=op)
        return [sys.executable, "-c", prelude + "\nfrom SCons.Script.Main import main\nmain()", *args]
    return [sys.executable, "-m", "SCons", *args]


SETTLE = {"seconds": 5.0}  # --settle


def timed(cmd: list[str], cwd: str = REPO, env: dict | None = None, settle: bool = False) -> _common.Run:
    """_common.run, after flushing dirty pages: the writeback of what earlier
    steps wrote (a 0.5 GB precompiled header, 711 objects) must not land on
    the timed run, whichever side it is.  With `settle`, also wait a few
    seconds: on this ext4, creating 1,425 files takes 0.15 s on a settled
    file system and up to 0.9 s right after another run created as many
    (the cold scenario, run after run)."""
    os.sync()
    if settle:
        time.sleep(SETTLE["seconds"])
    return run(cmd, cwd=cwd, env=child_env(env))


def child_env(env: dict | None = None) -> dict:
    """Python's default bytecode cache, even where PYTHONDONTWRITEBYTECODE is
    set (as on our CI machines): torchgen is installed with its bytecode, our
    generator runs from a checkout, and recompiling it in every process would
    cost ours ~0.07 s a run that no user pays."""
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def scons(cwd: str, *args: str, check: bool = True, settle: bool = False) -> _common.Run:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOGRAD_")}
    r = timed(scons_cmd(cwd, ["-Q", "--debug=time", *args]), cwd=cwd, env=env, settle=settle)
    if check and r.returncode != 0:
        raise SystemExit(f"bench_rebuild: scons {' '.join(args)} (in {cwd}) failed with exit "
                         f"{r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


REPORT_RE = re.compile(r"^autograd_functions: \S+: (\d+) Functions: (?:would be )?(\d+) regenerated, "
                       r"(\d+) unchanged, (?:would be )?(\d+) removed(.*)$", re.M)


def parse_report(out: str) -> dict:
    m = REPORT_RE.search(out)
    if m is None:
        raise Miscount(f"no autograd_functions report in the scons output:\n{out[-2000:]}")
    rest = m.group(5)
    identical = re.search(r"(\d+) re-rendered identical", rest)
    recompiled = re.search(r"(\d+) objects? recompiled", rest)
    return {"functions": int(m.group(1)), "regenerated": int(m.group(2)), "removed": int(m.group(4)),
            "identical": int(identical.group(1)) if identical else 0,
            "recompiled": int(recompiled.group(1)) if recompiled else None,
            "line": m.group(0)}


def sconscript_phase(out: str) -> float | None:
    m = re.search(r"Total SConscript file execution time: ([\d.]+)", out)
    return float(m.group(1)) if m else None


def sha(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def fmt(s: dict | None, digits: int = 2) -> str:
    if not s or s.get("median") is None:
        return "–"
    if s["n"] == 1:
        return f"{s['median']:.{digits}f}"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def machine() -> dict:
    def cmd(*c):
        try:
            return subprocess.run(c, capture_output=True, text=True).stdout.strip()
        except OSError:
            return None
    return {"loadavg": os.getloadavg(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "cxx": (cmd("g++", "--version") or "").split("\n")[0], "uname": platform.uname()._asdict()}


# ------------------------------------------------------------- the bench


class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.work = args.workdir or tempfile.mkdtemp(prefix="bench_rebuild_")
        os.makedirs(self.work, exist_ok=True)
        self.jobs = args.jobs
        self.t0 = time.perf_counter()
        self.failures: list[str] = []
        # scenario -> side -> list of per-repetition dicts
        self.runs: dict = {s: {} for s in SCENARIOS}
        self.floor: dict = {}
        self.log(f"work folder {self.work}; load average {os.getloadavg()[0]:.2f}")

    def log(self, msg: str) -> None:
        print(f"[{time.perf_counter() - self.t0:7.1f} s] {msg}", flush=True)

    def record(self, scenario: str, side: str, **fig) -> None:
        self.runs[scenario].setdefault(side, []).append(fig)

    # -- setup -------------------------------------------------------------

    def setup(self) -> None:
        w = self.work
        self.specs = Specs(os.path.join(w, "specs"))
        self.wrapper = Wrapper(w, self.args.cxx)
        self.wrapper.set(real_pch=int(not self.args.standin_only))
        self.ours = os.path.join(w, "ours")
        if not os.path.exists(self.ours):
            clone(self.ours)
        self.sargs = ["SPECS=torch", f"TORCH_SPECS={self.specs.folder}", f"CXX={self.wrapper.path}",
                      f"PCH={int(self.args.pch)}"]
        self.empty = os.path.join(w, "empty")
        os.makedirs(self.empty, exist_ok=True)
        open(os.path.join(self.empty, "SConstruct"), "w").close()
        self.tg_root = os.path.join(w, "torchgen")
        self.tg_out = os.path.join(self.tg_root, "torch", "csrc", "autograd", "generated")
        os.makedirs(self.tg_out, exist_ok=True)

        self.log("setup: generate (full tree and generate-only tree)")
        scons(self.ours, *self.sargs, "BUILD=build", "generate")
        os.makedirs(os.path.join(self.ours, "build-gen"), exist_ok=True)  # torch facts: asked once
        shutil.copy(os.path.join(self.ours, "build", ".torch.json"), os.path.join(self.ours, "build-gen"))
        scons(self.ours, *self.sargs, "BUILD=build-gen", "generate")
        gen = os.path.join("build", "torch", "gen")
        if self.args.pch:
            self.log("setup: precompiled prelude (real compile)")
            scons(self.ours, *self.sargs, "BUILD=build", os.path.join(gen, "prelude_pch.h.gch"))
            pch = [e for e in self.wrapper.take_log() if e["kind"] == "pch"]
            self.floor["pch_build_s"] = pch[0]["seconds"] if pch else None
        obj = os.path.join(gen, "functions", TEMPLATE_OP + ".os")
        # The exact command SCons compiles it with: -n shows it when the
        # object is missing (moved aside for that, then back, untouched).
        aside = os.path.join(self.ours, obj + ".aside")
        if os.path.exists(os.path.join(self.ours, obj)):
            os.rename(os.path.join(self.ours, obj), aside)
        try:
            dry = scons(self.ours, *self.sargs, "BUILD=build", "-n", obj).stdout
        finally:
            if os.path.exists(aside):
                os.rename(aside, os.path.join(self.ours, obj))
        line = next((ln for ln in dry.splitlines() if f"-o {obj} -c " in ln), None)
        if line is None:
            raise SystemExit(f"bench_rebuild: no compile command for {obj} in:\n{dry[-2000:]}")
        self.compile_cmd = shlex.split(line)
        self.compile_cmd[0] = self.args.cxx
        if not self.args.standin_only:
            self.per_tu()
        self.log("setup: the full graph up to date with stand-in objects ...")
        # Stand-ins are cheap processes: more of them at once than cores.
        out = scons(self.ours, *self.sargs, "BUILD=build", f"-j{max(4, 2 * self.jobs)}").stdout
        log = self.wrapper.take_log()
        made = objects_in(log)
        links = [e for e in log if e["kind"] == "link"]
        self.floor["cold_link_s"] = links[-1]["seconds"] if links and links[-1]["real"] else None
        self.log(f"setup: {len(made)} stand-in objects, library linked "
                 f"({'real' if links and links[-1]['real'] else 'stand-in'} link, "
                 f"{self.floor['cold_link_s'] or 0:.1f} s)")
        self.n_functions = parse_report(out)["functions"]
        self.log("setup: torchgen's Functions.h/.cpp")
        self.torchgen(self.tg_out)

    @property
    def plain_cmd(self) -> list[str]:
        """The per-op compile command without -Winvalid-pch -include <prelude_pch.h>."""
        plain, skip = [], False
        for a in self.compile_cmd:
            if skip:
                skip = False
            elif a == "-include":
                skip = True
            elif a != "-Winvalid-pch":
                plain.append(a)
        return plain

    def per_tu(self) -> None:
        """The floor: one per-op TU compiled alone, with and without the
        precompiled prelude (the first real object is the stand-ins' model)."""
        d = os.path.join(self.work, "floor")
        os.makedirs(d, exist_ok=True)
        plain = self.plain_cmd
        reps = 1 if self.quick else self.args.repeat
        variants = [("with_pch", self.compile_cmd)] if self.args.pch else []
        if not self.quick or not self.args.pch:
            variants.append(("without_pch", plain))
        template = None
        for name, cmd in variants:
            times = []
            for i in range(reps):
                c = list(cmd)
                c[c.index("-o") + 1] = os.path.join(d, f"{TEMPLATE_OP}.{name}.os")
                r = timed(c, cwd=self.ours)
                if r.returncode != 0:
                    raise SystemExit(f"bench_rebuild: per-TU compile failed:\n{' '.join(c)}\n{r.stderr[-3000:]}")
                if "invalid" in r.stderr and "pch" in r.stderr.lower():
                    raise SystemExit(f"bench_rebuild: the precompiled prelude was not used:\n{r.stderr[-2000:]}")
                times.append(r.wall)
                self.log(f"floor: one per-op TU ({TEMPLATE_OP}) {name.replace('_', ' ')}: {r.wall:.1f} s, "
                         f"peak RSS {r.rss_mib:.0f} MiB")
            self.floor[f"per_tu_{name}"] = summarize(times)
            template = template or c[c.index("-o") + 1]
        # The stand-ins' model: the real object, its strong symbols to rename.
        nm = subprocess.run(["nm", "--defined-only", "-g", "--format=posix", template],
                            capture_output=True, text=True, check=True).stdout
        syms = [ln.split()[0] for ln in nm.splitlines() if len(ln.split()) >= 2 and ln.split()[1] in "TDBR"]
        with open(template + ".syms", "w") as f:
            f.write("\n".join(syms) + "\n")
        self.wrapper.set(template=template)
        self.floor["object_bytes"] = os.path.getsize(template)

    # -- one side each -----------------------------------------------------

    def torchgen(self, out: str, settle: bool = False) -> _common.Run:
        s = self.specs
        r = timed([sys.executable, "-c", TORCHGEN, s.nf, s.tags, s.d, out], settle=settle)
        if r.returncode != 0:
            raise SystemExit(f"bench_rebuild: torchgen failed:\n{r.stderr[-3000:]}")
        return r

    def compile_functions_cpp(self, root: str) -> float:
        """torchgen's Functions.cpp with our TUs' compiler and flags (no PCH:
        one TU gains nothing from it); its own Functions.h comes first."""
        cmd = [a for a in self.plain_cmd]
        src = os.path.join(root, "torch", "csrc", "autograd", "generated", "Functions.cpp")
        cmd[cmd.index("-o") + 1] = os.path.join(root, "Functions.o")
        cmd[-1] = src
        cmd = [a for a in cmd if a != "-Ibuild/torch/gen"]
        cmd.insert(1, f"-I{root}")
        r = timed(cmd, cwd=self.ours)
        if r.returncode != 0:
            raise SystemExit(f"bench_rebuild: compiling torchgen's Functions.cpp failed:\n{r.stderr[-3000:]}")
        self.log(f"  torchgen Functions.cpp compiled in {r.wall:.1f} s (peak RSS {r.rss_mib:.0f} MiB)")
        return r.wall

    def check(self, scenario: str, side: str, rep: dict, compiled: int | None) -> None:
        """The counts a run must show; a difference is recorded as a failure."""
        regen, removed, recompiled = EXPECT[scenario]
        problems = []
        if rep["identical"]:
            problems.append(f"{rep['identical']} cache miss(es) where a hit was due: Function(s) "
                            f"re-rendered to unchanged text, their key changed though their inputs did not")
        if rep["regenerated"] != regen:
            problems.append(f"{rep['regenerated']} Functions regenerated, expected {regen}")
        if rep["removed"] != removed:
            problems.append(f"{rep['removed']} Functions removed, expected {removed}")
        if compiled is not None and compiled != recompiled:
            problems.append(f"{compiled} objects recompiled, expected {recompiled}")
        if compiled is not None and rep["recompiled"] is not None and rep["recompiled"] != compiled:
            problems.append(f"the report says {rep['recompiled']} objects recompiled, "
                            f"the compiler ran {compiled} times")
        if problems:
            msg = (f"cache-hit check failed: {side} / {LABELS[scenario]}: " + "; ".join(problems)
                   + f"\n    report: {rep['line']}")
            self.failures.append(msg)
            print("FAIL " + msg, flush=True)

    def ours_generate(self, scenario: str) -> None:
        r = scons(self.ours, *self.sargs, "BUILD=build-gen", "generate")
        rep = parse_report(r.stdout)
        self.check(scenario, "ours generate", rep, None)
        self.record(scenario, "ours_generate", wall=r.wall, sconscript=sconscript_phase(r.stdout),
                    regenerated=rep["regenerated"], removed=rep["removed"])
        self.log(f"  ours scons generate: {r.wall:.2f} s")

    def ours_full(self, scenario: str) -> None:
        real = not self.args.standin_only and (not self.quick or scenario == "formula1")
        self.wrapper.set(mode="real" if real else "standin")
        self.wrapper.take_log()
        r = scons(self.ours, *self.sargs, "BUILD=build", f"-j{self.jobs}")
        log = self.wrapper.take_log()
        objs = objects_in(log)
        links = [e for e in log if e["kind"] == "link"]
        rep = parse_report(r.stdout)
        self.check(scenario, "ours generate + compile + relink", rep, len(objs))
        # Wall time from the first compile's start to the last one's end (-jN).
        span = (max(e["start"] + e["seconds"] for e in objs) - min(e["start"] for e in objs)) if objs else 0.0
        fig = dict(wall=r.wall, sconscript=sconscript_phase(r.stdout), regenerated=rep["regenerated"],
                   removed=rep["removed"], compiled=len(objs), compile_real=real,
                   compile_s=[e["seconds"] for e in objs], compile_span_s=span,
                   link_s=links[-1]["seconds"] if links else 0.0,
                   link_real=bool(links and links[-1]["real"]))
        self.record(scenario, "ours_full", **fig)
        self.log(f"  ours scons: {r.wall:.2f} s (reading + generating {fig['sconscript'] or 0:.2f} s; "
                 f"{len(objs)} {'real' if real else 'stand-in'} compiles in {span:.1f} s, longest "
                 f"{max(fig['compile_s'], default=0):.1f} s; link {fig['link_s']:.2f} s"
                 f"{'' if fig['link_real'] or not links else ' (stand-in)'})")

    def torchgen_side(self, scenario: str, i: int) -> None:
        cpp = os.path.join(self.tg_out, "Functions.cpp")
        before = sha(cpp)
        r = self.torchgen(self.tg_out)
        changed = sha(cpp) != before
        compile_s = None
        if changed and not self.quick and i < self.args.torchgen_compiles:
            compile_s = self.compile_functions_cpp(self.tg_root)
        self.record(scenario, "torchgen", wall=r.wall, rss_mib=r.rss_mib, changed=changed,
                    compile_s=compile_s)
        self.log(f"  torchgen: {r.wall:.2f} s, Functions.cpp {'changed' if changed else 'unchanged'}")

    def empty_floor(self) -> None:
        r = scons(self.empty)
        self.record("noop", "empty", wall=r.wall)

    # -- scenarios ---------------------------------------------------------

    def cold(self, i: int) -> None:
        # Fresh folders (deleting a big tree just before writing another one
        # slows the writes down on ext4: old ones are deleted at the end).
        build = f"build-cold-{i}"
        os.makedirs(os.path.join(self.ours, build), exist_ok=True)
        shutil.copy(os.path.join(self.ours, "build", ".torch.json"), os.path.join(self.ours, build))
        tg = os.path.join(self.work, f"torchgen-cold-{i}")
        cli = os.path.join(self.work, f"cli-cold-{i}")
        sides = ["ours", "cli", "torchgen"]
        for side in sides if i % 2 == 0 else sides[::-1]:
            if side == "ours":
                r = scons(self.ours, *self.sargs, f"BUILD={build}", "generate", settle=True)
                rep = parse_report(r.stdout)
                if rep["regenerated"] != self.n_functions:
                    self.failures.append(f"cold generation: {rep['regenerated']} of {self.n_functions} "
                                         f"Functions generated\n    report: {rep['line']}")
                self.record("cold", "ours_generate", wall=r.wall, sconscript=sconscript_phase(r.stdout),
                            regenerated=rep["regenerated"], removed=0)
                self.log(f"  ours scons generate: {r.wall:.2f} s")
            elif side == "cli":
                s = self.specs
                r = timed([sys.executable, "-m", "codegen", "generate", "--native-functions", s.nf,
                         "--tags", s.tags, "--derivatives", s.d, "--out", cli, "--quiet",
                         "--include", "torch/csrc/autograd/FunctionsManual.h"], cwd=self.ours, settle=True)
                if r.returncode:
                    raise SystemExit(f"bench_rebuild: python -m codegen generate failed:\n{r.stderr}")
                self.record("cold", "ours_cli", wall=r.wall, rss_mib=r.rss_mib)
                self.log(f"  ours python -m codegen generate: {r.wall:.2f} s")
            else:
                out = os.path.join(tg, "torch", "csrc", "autograd", "generated")
                os.makedirs(out)
                r = self.torchgen(out, settle=True)
                compile_s = None
                if not self.quick and i < self.args.torchgen_compiles:
                    compile_s = self.compile_functions_cpp(tg)
                self.record("cold", "torchgen", wall=r.wall, rss_mib=r.rss_mib, changed=True,
                            compile_s=compile_s)
                self.log(f"  torchgen: {r.wall:.2f} s")
        self.trash += [os.path.join(self.ours, build), tg, cli]

    def scenario(self, name: str, i: int) -> None:
        s = self.specs
        if name == "formula1":
            s.edit_formulas(FORMULA_1, i + 2)
        elif name == "formula10":
            s.edit_formulas(FORMULA_10, i + 2)
        elif name == "schema":
            s.edit_schema(i)
        elif name == "remove":
            s.remove(REMOVE[i % len(REMOVE)])
        elif name == "add":
            s.add_back()
        sides = ["gen", "full"] + (["empty"] if name == "noop" else [])
        if not self.quick or name in QUICK_TORCHGEN:
            sides.append("torchgen")
        for side in sides if i % 2 == 0 else sides[::-1]:
            if side == "gen":
                self.ours_generate(name)
            elif side == "full":
                self.ours_full(name)
            elif side == "torchgen":
                self.torchgen_side(name, i)
            else:
                self.empty_floor()

    def run_all(self) -> None:
        self.trash: list[str] = []
        self.setup()
        reps = 1 if self.quick else self.args.repeat
        names = [n for n in SCENARIOS if n in self.args.scenarios]
        for i in range(reps):
            for name in names:
                self.log(f"repetition {i + 1}/{reps}: {LABELS[name]}")
                if name == "cold":
                    self.cold(i)
                else:
                    self.scenario(name, i)
        for p in self.trash:
            shutil.rmtree(p, ignore_errors=True)

    # -- results -----------------------------------------------------------

    def results(self) -> dict:
        res: dict = {"scenarios": {}}
        per_tu = self.floor.get("per_tu_with_pch") if self.args.pch else self.floor.get("per_tu_without_pch")
        for name in SCENARIOS:
            sides = self.runs[name]
            if not sides:
                continue
            row: dict = {"label": LABELS[name], "raw": sides}
            for side in ("ours_generate", "ours_full", "ours_cli", "torchgen", "empty"):
                if side in sides:
                    row[side] = summarize([x["wall"] for x in sides[side]])
            if "ours_full" in sides:
                full = sides["ours_full"]
                row["compiled"] = full[0]["compiled"]
                row["compile_real"] = all(x["compile_real"] for x in full) or not full[0]["compiled"]
                row["link"] = summarize([x["link_s"] for x in full])
            if "torchgen" in sides:
                tg = sides["torchgen"]
                comp = [x["compile_s"] for x in tg if x["compile_s"] is not None]
                row["torchgen_changed"] = any(x["changed"] for x in tg)
                row["torchgen_compile"] = summarize(comp)
                gen = row["torchgen"]["median"]
                if row["torchgen_changed"]:
                    row["torchgen_total"] = gen + row["torchgen_compile"]["median"] if comp else None
                else:
                    row["torchgen_total"] = gen
                if "ours_full" in row and row["torchgen_total"] and row["compile_real"]:
                    row["speedup"] = row["torchgen_total"] / row["ours_full"]["median"]
            res["scenarios"][name] = row
        if "cold" in res["scenarios"] and per_tu and per_tu["median"]:
            est = (self.floor.get("pch_build_s") or 0) + self.n_functions * per_tu["median"] / self.jobs \
                + (self.floor.get("cold_link_s") or 0)
            res["scenarios"]["cold"]["ours_full_estimate"] = est
        res["floor"] = self.floor
        res["criteria"] = self.criteria(res["scenarios"])
        res["config"] = {"repeat": 1 if self.quick else self.args.repeat, "quick": self.quick,
                         "jobs": self.jobs, "pch": bool(self.args.pch),
                         "torchgen_compiles": 0 if self.quick else self.args.torchgen_compiles,
                         "functions": getattr(self, "n_functions", None),
                         "compile_command": " ".join(getattr(self, "compile_cmd", [])),
                         "standin_only": self.args.standin_only, "settle_s": self.args.settle}
        res["machine_end"] = machine()
        res["failures"] = self.failures
        return res

    def criteria(self, sc: dict) -> list[dict]:
        out = []
        f1 = sc.get("formula1", {})
        if f1.get("speedup"):
            out.append({"what": "1 formula: torchgen (generate + compile Functions.cpp) / ours "
                                "(generate + compile + relink)", "value": f1["speedup"], "limit": ">= 10",
                        "ok": f1["speedup"] >= 10})
        noop = sc.get("noop", {})
        if "ours_full" in noop and "empty" in noop:
            d = noop["ours_full"]["median"] - noop["empty"]["median"]
            out.append({"what": "no-op: ours (scons) - empty SConstruct, seconds", "value": d,
                        "limit": "<= 0.5", "ok": d <= 0.5})
        cold = sc.get("cold", {})
        if "ours_generate" in cold and "torchgen" in cold:
            for side, what in (("ours_generate", "scons generate"), ("ours_cli", "python -m codegen generate")):
                if side in cold:
                    r = cold[side]["median"] / cold["torchgen"]["median"]
                    out.append({"what": f"cold generation: ours ({what}) / torchgen", "value": r,
                                "limit": "<= 0.25", "ok": r <= 0.25})
        return out

    def table(self, res: dict) -> str:
        sc = res["scenarios"]
        fl = res["floor"]
        rows = ["| scenario | Functions regenerated / removed | ours: `scons generate` | "
                "ours: `scons` (generate + compile + relink) | objects compiled | "
                "torchgen: generate | torchgen: + compile Functions.cpp | torchgen / ours |",
                "|---|---|---|---|---|---|---|---|"]
        for name in SCENARIOS:
            if name not in sc:
                continue
            r = sc[name]
            raw = r["raw"]
            g = raw.get("ours_generate") or raw.get("ours_full") or [{}]
            regen = f"{g[0].get('regenerated', '')} / {g[0].get('removed', 0)}"
            if name == "cold":
                est = r.get("ours_full_estimate")
                full = (f"est. {est / 60:.0f} min ({self.n_functions} TUs x per-TU / {self.jobs} jobs)"
                        if est else "–")
                compiled = f"({self.n_functions})"
                gen = fmt(r.get("ours_generate")) + (f"; generator alone {fmt(r['ours_cli'])}"
                                                     if "ours_cli" in r else "")
            else:
                full = fmt(r.get("ours_full"))
                if not r.get("compile_real", True):
                    full += " (stand-in compiles)"
                compiled = str(r.get("compiled", "–"))
                gen = fmt(r.get("ours_generate"))
            tgc = r.get("torchgen_compile") or {}
            if "torchgen" not in r:
                tg_full = "–"
            elif not r.get("torchgen_changed"):
                tg_full = f"{fmt(r.get('torchgen'))} (unchanged: no compile)"
            elif tgc.get("median") is not None:
                tg_full = f"{r['torchgen_total']:.1f} (compile {fmt(tgc, 1)}, n={tgc['n']})"
            else:
                tg_full = "not compiled" + (" (--quick)" if self.quick else "")
            sp = r.get("speedup")
            speed = "–" if not sp else f"{sp:.0f}x" if sp >= 10 else f"{sp:.1f}x"
            rows.append(f"| {LABELS[name]} | {regen} | {gen} | {full} | {compiled} | "
                        f"{fmt(r.get('torchgen'))} | {tg_full} | {speed} |")
        if "noop" in sc and "empty" in sc["noop"]:
            rows.append(f"| floor: empty SConstruct | | | {fmt(sc['noop']['empty'])} | | | | |")
        for name, label in (("per_tu_with_pch", "with the precompiled prelude"),
                            ("per_tu_without_pch", "without it")):
            if fl.get(name):
                rows.append(f"| floor: one per-op TU ({TEMPLATE_OP}) alone, {label} | | | "
                            f"{fmt(fl[name], 1)} | 1 | | | |")
        if fl.get("pch_build_s") and not self.args.standin_only:
            rows.append(f"| (once per flags) precompiling the prelude | | | {fl['pch_build_s']:.1f} | | | | |")
        rows += ["", "Seconds: median (min–max) of the repetitions.", "",
                 "Where ours' time goes (`scons`, medians, seconds): reading the SConscripts "
                 f"(where the tool generates), compiling (first start to last end, -j{self.jobs}; "
                 "the longest single TU), the relink, and the rest (SCons: start, graph walk, "
                 "signatures, .sconsign).", "",
                 "| scenario | total | reading + generating | compiling (longest TU) | relink | rest |",
                 "|---|---|---|---|---|---|"]
        for name in SCENARIOS:
            full = sc.get(name, {}).get("raw", {}).get("ours_full")
            if not full:
                continue

            def med(xs):
                return summarize(xs)["median"] or 0.0
            total = med([x["wall"] for x in full])
            read = med([x["sconscript"] or 0.0 for x in full])
            span = med([x.get("compile_span_s", max(x["compile_s"], default=0.0)) for x in full])
            longest = med([max(x["compile_s"], default=0.0) for x in full])
            link = med([x["link_s"] for x in full])
            stand = "" if all(x["compile_real"] for x in full) or not full[0]["compiled"] else " (stand-in)"
            rows.append(f"| {LABELS[name]} | {total:.2f} | {read:.2f} | {span:.2f} ({longest:.2f}){stand} | "
                        f"{link:.2f} | {max(total - read - span - link, 0):.2f} |")
        rows.append("")
        rows += [f"- {c['what']}: {c['value']:.2f} (target {c['limit']}): {'ok' if c['ok'] else 'NOT MET'}"
                 for c in res["criteria"]]
        return "\n".join(rows) + "\n"

    def chart(self, res: dict, path: str) -> bool:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            import matplotlib.ticker
        except ImportError:
            return False
        sc = res["scenarios"]
        fig, ax = plt.subplots(figsize=(11, 5))
        series = [("ours_full", "ours: scons (generate + compile + relink)", "C0", "o", "-"),
                  ("ours_generate", "ours: scons generate", "C0", "s", ":"),
                  ("torchgen_total", "torchgen: generate + compile Functions.cpp", "C3", "o", "-"),
                  ("torchgen", "torchgen: generate", "C3", "s", ":")]
        line_sc = ["noop", "formula1", "formula10"]
        for key, label, color, marker, style in series:
            def y(name):
                r = sc.get(name, {})
                v = r.get(key)
                return v["median"] if isinstance(v, dict) else v
            pts = [(EDITED[n], y(n)) for n in line_sc if n in sc and y(n)]
            if pts:
                ax.plot(*zip(*pts), color=color, marker=marker, linestyle=style, label=label)
            for n, m in (("schema", "^"), ("remove", "v"), ("add", "D")):
                if n in sc and y(n):
                    ax.plot([EDITED[n]], [y(n)], color=color, marker=m, linestyle="none")
        if "noop" in sc and "empty" in sc["noop"]:
            ax.axhline(sc["noop"]["empty"]["median"], color="grey", linestyle="--", linewidth=1,
                       label="floor: empty SConstruct")
        for n, m in (("schema", "^"), ("remove", "v"), ("add", "D")):
            ax.plot([], [], color="black", marker=m, linestyle="none", label=f"{LABELS[n]} (at x=1)")
        ax.set_xscale("symlog", linthresh=1)
        ax.set_yscale("log")
        plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.set_xticks([0, 1, 10])
        ax.set_xticklabels(["0 (no-op)", "1", "10"])
        ax.set_xlabel("derivatives entries edited")
        ax.set_ylabel("rebuild wall time, seconds (log)")
        ax.set_title(f"Rebuild after an edit, torch 2.13 specs ({res['config']['functions']} Functions), "
                     f"{self.jobs} cores")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring (benchmarks/bench_rebuild.py) for the method.")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions of each scenario (default %(default)s)")
    ap.add_argument("--out", metavar="DIR",
                    help="write results.json, results.md and rebuild.png here (default: print only "
                    "with --quick, bench_rebuild_results/ otherwise)")
    ap.add_argument("--quick", action="store_true",
                    help="CI: one repetition, two real TU compiles, checks the cache-hit counts (< 3 min)")
    ap.add_argument("--workdir", metavar="DIR", help="work here and keep it (default: a temporary folder)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2,
                    help="parallel compiles of ours (default: %(default)s)")
    ap.add_argument("--torchgen-compiles", type=int, default=1, metavar="N",
                    help="compile torchgen's Functions.cpp on the first N repetitions of each scenario "
                    "(each takes minutes; default %(default)s)")
    ap.add_argument("--no-pch", dest="pch", action="store_false",
                    help="ours without the precompiled prelude (scons PCH=0)")
    ap.add_argument("--cxx", default="g++", help="the real compiler (default %(default)s)")
    ap.add_argument("--settle", type=float, default=5.0, metavar="S",
                    help="in the cold scenario, wait S seconds (after a sync) before each timed run, "
                    "so that the file system has settled from the previous one (default %(default)s)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help=f"comma-separated subset of {','.join(SCENARIOS)}")
    ap.add_argument("--standin-only", action="store_true",
                    help="no real compile of ours at all (checks the counts only; for tests)")
    args = ap.parse_args(argv)
    args.scenarios = args.scenarios.split(",")
    bad = [s for s in args.scenarios if s not in SCENARIOS]
    if bad:
        ap.error(f"unknown scenario(s): {', '.join(bad)}")
    if args.standin_only and not args.quick:
        ap.error("--standin-only is a --quick option")
    out = args.out or (None if args.quick else "bench_rebuild_results")
    SETTLE["seconds"] = args.settle

    start = machine()
    bench = Bench(args)
    try:
        bench.run_all()
        res = bench.results()
    finally:
        if not args.workdir:
            shutil.rmtree(bench.work, ignore_errors=True)
    res["machine_start"] = start
    res["command"] = "python benchmarks/bench_rebuild.py " + " ".join(argv if argv is not None else sys.argv[1:])
    res["seconds_total"] = time.perf_counter() - bench.t0
    table = bench.table(res)
    print("\n" + table)
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(out, "results.md"), "w") as f:
            f.write(f"`{res['command']}`\n\n" + table)
        png = os.path.join(out, "rebuild.png")
        if bench.chart(res, png):
            print(f"wrote {out}/results.json, results.md, rebuild.png")
        elif args.quick:
            print(f"wrote {out}/results.json, results.md (no chart: matplotlib is not installed)")
        else:
            print("bench_rebuild: the chart needs matplotlib: pip install -e '.[bench]'", file=sys.stderr)
            return 1
    print(f"total {res['seconds_total']:.0f} s; load average at the end "
          f"{res['machine_end']['loadavg'][0]:.2f}")
    if bench.failures:
        print(f"\nbench_rebuild: {len(bench.failures)} cache-hit check(s) failed:", file=sys.stderr)
        for f in bench.failures:
            print("  " + f, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
