"""Helpers shared by the benchmarks (not a benchmark itself): the spec paths,
the commands of both sides (ours and torchgen's reference pipeline), a
checkout copy, the scons runner and the stand-in compiler.  Nothing here
imports from tests/.

Every measurement runs in a fresh subprocess, as a build step would; wall
time is taken around Popen..wait4, and the child's own rusage from os.wait4
gives its peak RSS and its CPU time (user + sys, the child's and every
descendant's it waited for: a `scons` run's compilers included).
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from autograd_scons.buildenv import torch_flags  # where the SConstruct finds torch's specs too


FUNCTIONS_MANUAL = "torch/csrc/autograd/FunctionsManual.h"

# torchgen's path to the autograd infos and, given an output folder, to the
# Functions: load_derivatives, then match_differentiability_info (which adds
# the foreach infos, as gen_autograd does) and gen_autograd_functions_lib,
# which writes Functions.h/.cpp through a FileManager that rewrites only the
# files whose contents changed.
TORCHGEN = """\
import os, sys
from torchgen.packaged.autograd.load_derivatives import load_derivatives
nf, tags, d = sys.argv[1:4]
infos, _ = load_derivatives(d, nf, tags)
assert infos
if len(sys.argv) > 4:
    import torchgen
    from torchgen.api import cpp
    from torchgen.api.autograd import match_differentiability_info
    from torchgen.gen import parse_native_yaml
    from torchgen.packaged.autograd.gen_autograd_functions import gen_autograd_functions_lib
    fns = sorted(parse_native_yaml(nf, tags).native_functions, key=lambda f: cpp.name(f.func))
    match_differentiability_info(fns, infos)
    templates = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "autograd", "templates")
    gen_autograd_functions_lib(sys.argv[4], infos, templates)
    if sys.argv[5:] == ["python"]:  # torchgen's whole job: python_functions.h and its 5 shards too
        from torchgen.packaged.autograd.gen_autograd_functions import gen_autograd_functions_python
        gen_autograd_functions_python(sys.argv[4], infos, templates)
"""


def spec_paths() -> tuple[str, str, str]:
    """(native_functions.yaml, tags.yaml, derivatives.yaml) shipped with torchgen."""
    return torch_flags.torch_specs()


def torchgen_cmd(nf: str, tags: str, d: str, out: str | None = None, python: bool = False) -> list[str]:
    """torchgen's infos (load_derivatives), or with `out` its Functions.h/.cpp written there
    (`python`: and python_functions.h, python_functions_0..4.cpp, as torch's build does)."""
    return [sys.executable, "-c", TORCHGEN, nf, tags, d] + ([out] if out else []) + (["python"] if python else [])


def ours_cmd(nf: str, tags: str, d: str, out: str | None = None) -> list[str]:
    """`python -m autograd_scons infos`, or with `out` `generate` (torch's helpers included)."""
    if out is None:
        return [sys.executable, "-m", "autograd_scons", "infos", "--native-functions", nf, "--tags", tags,
                "--derivatives", d]
    return [sys.executable, "-m", "autograd_scons", "generate", "--native-functions", nf, "--tags", tags,
            "--derivatives", d, "--out", out, "--include", FUNCTIONS_MANUAL, "--quiet"]


@dataclass
class Run:
    wall: float        # seconds
    cpu: float         # user + sys seconds, the child and its waited-for descendants
    rss_mib: float     # the child's own peak RSS
    returncode: int
    stdout: str
    stderr: str


def child_env(env: dict | None = None) -> dict:
    """Python's default bytecode cache, even where PYTHONDONTWRITEBYTECODE is
    set (as on our CI machines): torchgen is installed with its bytecode, our
    generator runs from a checkout, and recompiling it in every process would
    cost ours ~0.07 s a run that no user pays."""
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(cmd: list[str], cwd: str = REPO, env: dict | None = None) -> Run:
    """Run cmd once in a fresh child; never raises on failure (see .returncode).

    Output goes to temporary files rather than pipes, so that the child can
    be reaped with wait4 (for its own rusage) without a pipe filling up."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=child_env(env), stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,  # Linux: KiB
                   proc.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def timed(cmd: list[str], cwd: str = REPO, settle: float = 0.0) -> Run:
    """run(), after flushing dirty pages: the writeback of what earlier steps
    wrote (a 0.5 GB precompiled header, hundreds of objects) must not land on
    the timed run.  `settle`: then wait that long (creating ~1,400 files takes
    0.15 s on a settled ext4, up to 0.9 s right after a run created as many)."""
    os.sync()
    if settle:
        time.sleep(settle)
    return run(cmd, cwd=cwd)


def machine() -> dict:
    """What the figures were measured on."""
    gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return {"loadavg": os.getloadavg(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "cxx": gxx, "uname": platform.uname()._asdict()}


def run_once(cmd: list[str], cwd: str = REPO) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS MiB, exit code, stderr tail) of one fresh child."""
    r = run(cmd, cwd)
    return r.wall, r.rss_mib, r.returncode, r.stderr[-2000:]


def alternate(variants: dict[str, list[str]], repeat: int, log=print) -> dict[str, list[Run]]:
    """Run every variant `repeat` times, alternating the order each round so
    that machine noise hits all alike; a variant that fails once is dropped
    (its failing Run is kept last)."""
    runs: dict[str, list[Run]] = {name: [] for name in variants}
    names = list(variants)
    for i in range(repeat):
        for name in names if i % 2 == 0 else names[::-1]:
            if runs[name] and runs[name][-1].returncode:
                continue
            r = run(variants[name])
            runs[name].append(r)
            log(f"  [{i + 1}/{repeat}] {name:9s} {r.wall:7.3f} s  {r.rss_mib:7.1f} MiB"
                + (f"  FAILED (exit {r.returncode})" if r.returncode else ""))
    return runs


def summarize(values: list[float]) -> dict:
    """Median, min, max and the raw values (an empty list gives None figures)."""
    if not values:
        return {"n": 0, "median": None, "min": None, "max": None, "values": []}
    return {"n": len(values), "median": statistics.median(values), "min": min(values),
            "max": max(values), "values": list(values)}


# ------------------------------------------------------------ scons side

_IGNORE = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.egg-info",
                                 ".sconsign*", "compile_commands.json", ".benchmarks", "bench_*_results")


def _left_out(folder: str, names: list[str]) -> set[str]:
    """What a clone leaves out: the build folders at the top only (the
    package has buildenv/, tool/builders.py, build_meta.py)."""
    skipped = set(_IGNORE(folder, names))
    if os.path.abspath(folder) == REPO:
        skipped |= {n for n in names if n.startswith("build")}
    return skipped


def clone(dst: str) -> str:
    """A copy of this checkout's working tree, as a second checkout would be."""
    shutil.copytree(REPO, dst, ignore=_left_out)
    return str(dst)


def scons_cmd(args: list[str], prelude: str = "") -> list[str]:
    """SCons run by this interpreter; `prelude` is Python run first in the same process."""
    if prelude:
        return [sys.executable, "-c", prelude + "\nfrom SCons.Script.Main import main\nmain()", *args]
    return [sys.executable, "-m", "SCons", *args]


_EXTENSIONS: list = []


def extensions_dir() -> str:
    """This benchmark run's $AUTOGRAD_EXTENSIONS_DIR (empty at its start)."""
    if not _EXTENSIONS:
        _EXTENSIONS.append(tempfile.mkdtemp(prefix="bench-extensions-"))
        # (its precompiled prelude is ~0.1-0.5 GB; never a forked child's to remove)
        pid = os.getpid()
        atexit.register(lambda: os.getpid() == pid and shutil.rmtree(_EXTENSIONS[0], ignore_errors=True))
    return _EXTENSIONS[0]


def scons(cwd: str, *args: str, check: bool = True, prelude: str = "", settle: float = 0.0) -> Run:
    """`scons -Q --debug=time ARGS` in cwd (AUTOGRAD_* variables of ours
    unset), timed as timed() times a command."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOGRAD_")}
    # The shared precompiled prelude of this run's builds (tool/pch_compilers.py):
    # built once, by the first build that needs it, as on a user's machine.
    env["AUTOGRAD_EXTENSIONS_DIR"] = extensions_dir()
    os.sync()
    if settle:
        time.sleep(settle)
    r = run(scons_cmd(["-Q", "--debug=time", *args], prelude), cwd=cwd, env=env)
    if check and r.returncode != 0:
        raise SystemExit(f"scons {' '.join(args)} (in {cwd}) failed with exit {r.returncode}:\n"
                         f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def sconscript_phase(out: str) -> float | None:
    """SCons's own figure for reading the SConscripts (where the tool generates)."""
    m = re.search(r"Total SConscript file execution time: ([\d.]+)", out)
    return float(m.group(1)) if m else None


def python_executable_script(path: str, body: str) -> str:
    """Write `body` as an executable Python script at `path`, run by this
    interpreter with -S (no site: ~10 ms start).  SCons hashes a compiler
    binary as a dependency of every object: a small script costs nothing
    there, the Python interpreter itself would cost ~1 s per run."""
    with open(path, "w") as f:
        f.write(f"#!{sys.executable} -S\n" + body)
    os.chmod(path, 0o755)
    return path


class Wrapper:
    """benchmarks/_cxxwrap.py, the stand-in compiler, installed in a work
    folder as one fixed compiler command, and its controls (a file SCons does
    not see): mode "standin" (digests, or copies of `template`) or "real"."""

    def __init__(self, work: str, cxx: str = "g++"):
        os.makedirs(os.path.join(work, "bin"), exist_ok=True)
        with open(os.path.join(REPO, "benchmarks", "_cxxwrap.py")) as f:
            # Named as the compiler: the tool reads GCC or clang off the name (tool/pch_compilers.py).
            self.path = python_executable_script(os.path.join(work, "bin", os.path.basename(cxx.split()[0])),
                                                 f.read())
        self.log = os.path.join(work, "cxx.log")
        self.cfg = {"cxx": cxx, "mode": "standin", "template": None, "log": self.log}
        self._write()

    def _write(self) -> None:
        with open(self.path + ".cfg", "w") as f:
            f.write("".join(f"{k}={'' if v is None else v}\n" for k, v in self.cfg.items()))

    def set(self, **kw) -> None:
        self.cfg.update(kw)
        self._write()

    def use_template(self, obj: str, support: str | None = None) -> None:
        """Stand-ins from now on are copies of the real object `obj`, its
        strong symbols renamed per copy (so that they link together); the
        first bucket's holds `support` too, the real object of support.cpp."""
        nm = subprocess.run(["nm", "--defined-only", "-g", "--format=posix", obj],
                            capture_output=True, text=True, check=True).stdout
        syms = [ln.split()[0] for ln in nm.splitlines() if len(ln.split()) >= 2 and ln.split()[1] in "TDBR"]
        with open(obj + ".syms", "w") as f:
            f.write("\n".join(syms) + "\n")
        self.set(template=obj, support=support)

    def take_log(self) -> list[dict]:
        """What the compiler was asked since the last call: one dict per call."""
        try:
            with open(self.log) as f:
                lines = [json.loads(x) for x in f if x.strip()]
        except FileNotFoundError:
            return []
        os.unlink(self.log)
        return lines
