"""The floors bench_rebuild.py measures every scenario against: one of
our TUs compiled alone, with and without the precompiled prelude, and the
header parse, the unit of CPU time its tables are in.  A mixin of its
Bench (which holds the checkout copy, the compile command and the figures).
"""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import time

import _common
from _common import Run, summarize
from rebuild_scenarios import TEMPLATE_OP


def timed(cmd: list[str], cwd: str) -> Run:
    return _common.timed(cmd, cwd, 0.0)


def scons(cwd: str, *args: str) -> Run:
    return _common.scons(cwd, *args, settle=0.0)


def without_prelude(cmd: list[str]) -> list[str]:
    """A compile command without the precompiled prelude (GCC's
    -Winvalid-pch -include <header>, clang's -include-pch <file>)."""
    plain, skip = [], False
    for arg in cmd:
        if skip:
            skip = False
        elif arg in ("-include", "-include-pch"):
            skip = True
        elif arg != "-Winvalid-pch":
            plain.append(arg)
    return plain


class Floors:
    def command_of(self, obj: str, args: list[str] | None = None) -> list[str]:
        """The exact command SCons compiles `obj` with (`args`: the scons
        arguments, default torch's build): -n shows it when the object is
        missing (moved aside for that, then back, untouched)."""
        path = os.path.join(self.ours, obj)
        if os.path.exists(path):
            os.rename(path, path + ".aside")
        try:
            dry = scons(self.ours, *(args or [*self.sargs, "BUILD=build"]), "-n", obj).stdout
        finally:
            if os.path.exists(path + ".aside"):
                os.rename(path + ".aside", path)
        line = next((ln for ln in dry.splitlines() if f"-o {obj} -c " in ln), None)
        if line is None:
            raise SystemExit(f"bench_rebuild: no compile command for {obj} in:\n{dry[-2000:]}")
        cmd = shlex.split(line)
        cmd[0] = self.args.cxx
        return cmd

    @property
    def plain_cmd(self) -> list[str]:
        """The per-op compile command without the precompiled prelude."""
        return without_prelude(self.compile_cmd)

    @staticmethod
    def alone_cmd(cmd: list[str], src: str, obj: str, extra: list[str] = ()) -> list[str]:
        """`cmd` (one of our TUs' compile line) compiling `src` into `obj` instead."""
        c = [x for x in cmd if not x.startswith("-Ibuild")]
        c[c.index("-o") + 1] = obj
        c[-1] = src
        c[1:1] = list(extra)
        return c

    def compile_parallel(self, cmds: list[list[str]], jobs: int) -> Run:
        """`cmds` run `jobs` at a time, as make -j would: wall of the whole,
        CPU of every compiler (user + sys)."""
        before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        pending, running, errors = list(cmds), [], []
        while pending or running:
            while pending and len(running) < jobs:
                running.append(subprocess.Popen(pending.pop(0), cwd=self.ours, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.PIPE, text=True))
            done = running.pop(0)
            _, err = done.communicate()
            if done.returncode:
                errors.append(err[-3000:])
        wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
        if errors:
            raise SystemExit(f"bench_rebuild: a torchgen compile failed:\n{errors[0]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return Run(wall, cpu, after.ru_maxrss / 1024, 0, "", "")

    def compile_alone(self, cmd: list[str], src: str, obj: str, extra: list[str] = ()) -> Run:
        """`cmd` (one of our TUs' compile line) compiling `src` into `obj` instead."""
        c = self.alone_cmd(cmd, src, obj, extra)
        r = timed(c, cwd=self.ours)
        if r.returncode != 0:
            raise SystemExit(f"bench_rebuild: compile failed:\n{' '.join(c)}\n{r.stderr[-3000:]}")
        if "invalid" in r.stderr and "pch" in r.stderr.lower():
            raise SystemExit(f"bench_rebuild: the precompiled prelude was not used:\n{r.stderr[-2000:]}")
        return r

    def per_tu(self) -> None:
        """The floor: one per-op TU compiled alone, with and without the
        precompiled prelude (the first real object is the stand-ins' model)."""
        d = os.path.join(self.work, "floor")
        os.makedirs(d, exist_ok=True)
        variants = [("with_pch", self.compile_cmd)] if self.args.pch else []
        if not self.quick or not self.args.pch:
            variants.append(("without_pch", self.plain_cmd))
        gen = ["-I" + os.path.join("build", "torch", "gen")]
        src = os.path.join("build", "torch", "gen", "functions", TEMPLATE_OP + ".cpp")
        template = None
        for name, cmd in variants:
            runs = []
            obj = os.path.join(d, f"{TEMPLATE_OP}.{name}.os")
            for _ in range(1 if self.quick else self.args.repeat):
                runs.append(self.compile_alone(cmd, src, obj, gen))
                self.log(f"floor: one per-op TU ({TEMPLATE_OP}) {name.replace('_', ' ')}: {runs[-1].wall:.1f} s")
            self.floor[f"per_tu_{name}"] = summarize([r.wall for r in runs])
            self.floor[f"per_tu_{name}_cpu"] = summarize([r.cpu for r in runs])["median"]
            template = template or obj
        self.floor["object_bytes"] = os.path.getsize(template)
        # What every Function's file calls, defined once per library (the
        # first bucket includes it): compiled for real, for the stand-ins.
        support = os.path.join(d, "support.os")
        self.compile_alone(variants[0][1], os.path.join("build", "torch", "gen", "support.cpp"), support, gen)
        self.wrapper.use_template(template, support)

    def standin_model(self) -> None:
        """With --standin-only, no per-op TU is compiled: the stand-ins are
        copies of a tiny real object instead, so that they are ELF objects
        as the override (tool/weaken.py) and the relink need."""
        d = os.path.join(self.work, "floor")
        os.makedirs(d, exist_ok=True)
        src, obj = os.path.join(d, "standin_model.cpp"), os.path.join(d, "standin_model.os")
        with open(src, "w") as f:
            f.write("int agf_standin_model(int x) { return x + 1; }\n")
        r = timed(shlex.split(self.args.cxx) + ["-c", "-fPIC", "-O0", src, "-o", obj], d)
        if r.returncode != 0:
            raise SystemExit(f"bench_rebuild: the stand-ins' model failed to compile:\n{r.stderr[-3000:]}")
        self.wrapper.use_template(obj)

    def header_parse(self) -> None:
        """The unit of CPU time: one TU of `#include "prelude_impl.h"` alone,
        the example extension's generated prelude, our TUs' flags (-O2)."""
        scons(self.ours, "BUILD=build-example", "generate")
        d = os.path.join(self.work, "header_parse")
        os.makedirs(d, exist_ok=True)
        src = os.path.join(d, "header_parse.cpp")
        with open(src, "w") as f:
            f.write('#include "prelude_impl.h"\n')
        incs = ["-I" + os.path.join(self.ours, "build-example", "example", "gen"),
                "-I" + os.path.join(self.ours, "specs", "include")]
        r = self.compile_alone(self.plain_cmd, src, os.path.join(d, "header_parse.o"), incs)
        # Measured again at each repetition (bench_rebuild.run_all), the unit
        # is the median: one sample on a shared machine moved the ratios by 15%.
        runs = self.floor.setdefault("header_parse_runs", [])
        runs.append([r.wall, r.cpu])
        self.floor["header_parse_wall_s"] = summarize([w for w, _ in runs])["median"]
        self.floor["header_parse_cpu_s"] = summarize([c for _, c in runs])["median"]
        self.log(f"floor: header parse {r.wall:.1f} s wall, {r.cpu:.1f} s CPU")
