"""Helpers shared by the benchmarks (not a benchmark itself).

Every measurement runs in a fresh subprocess, as a build step would; wall
time is taken around Popen..wait4 and peak RSS is the child's own rusage
from os.wait4 (getrusage(RUSAGE_CHILDREN) would give the maximum over all
children so far).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# torchgen's full path to the autograd Functions: load_derivatives,
# match_differentiability_info (which adds the foreach infos, as
# gen_autograd does) and gen_autograd_functions_lib, which writes
# Functions.h/.cpp into OUT through a FileManager that rewrites only files
# whose contents changed.
TORCHGEN = """\
import os, sys
import torchgen
from torchgen.api import cpp
from torchgen.api.autograd import match_differentiability_info
from torchgen.gen import parse_native_yaml
from torchgen.packaged.autograd.gen_autograd_functions import gen_autograd_functions_lib
from torchgen.packaged.autograd.load_derivatives import load_derivatives
nf, tags, d, out = sys.argv[1:5]
infos, _ = load_derivatives(d, nf, tags)
fns = sorted(parse_native_yaml(nf, tags).native_functions, key=lambda f: cpp.name(f.func))
match_differentiability_info(fns, infos)
gen_autograd_functions_lib(out, infos, os.path.join(os.path.dirname(torchgen.__file__),
                                                    "packaged", "autograd", "templates"))
"""


def spec_paths() -> tuple[str, str, str]:
    """(native_functions.yaml, tags.yaml, derivatives.yaml) shipped with torchgen."""
    import torchgen
    packaged = os.path.join(os.path.dirname(torchgen.__file__), "packaged")
    return (os.path.join(packaged, "ATen", "native", "native_functions.yaml"),
            os.path.join(packaged, "ATen", "native", "tags.yaml"),
            os.path.join(packaged, "autograd", "derivatives.yaml"))


@dataclass
class Run:
    wall: float        # seconds
    rss_mib: float     # the child's own peak RSS
    returncode: int
    stdout: str
    stderr: str


def run(cmd: list[str], cwd: str = REPO, env: dict | None = None) -> Run:
    """Run cmd once in a fresh child; never raises on failure (see .returncode).

    Output goes to temporary files rather than pipes, so that the child can
    be reaped with wait4 (for its own rusage) without a pipe filling up."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        return Run(wall, usage.ru_maxrss / 1024, proc.returncode,  # Linux: KiB
                   out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def run_once(cmd: list[str], cwd: str = REPO) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS MiB, exit code, stderr tail) of one fresh child."""
    r = run(cmd, cwd)
    return r.wall, r.rss_mib, r.returncode, r.stderr[-2000:]


def summarize(values: list[float]) -> dict:
    """Median, min, max and the raw values (an empty list gives None figures)."""
    if not values:
        return {"n": 0, "median": None, "min": None, "max": None, "values": []}
    return {"n": len(values), "median": statistics.median(values), "min": min(values),
            "max": max(values), "values": list(values)}


def python_executable_script(path: str, body: str) -> str:
    """Write `body` as an executable Python script at `path`, run by this
    interpreter with -S (no site: ~10 ms start).  SCons hashes a compiler
    binary as a dependency of every object: a small script costs nothing
    there, the Python interpreter itself would cost ~1 s per run."""
    with open(path, "w") as f:
        f.write(f"#!{sys.executable} -S\n" + body)
    os.chmod(path, 0o755)
    return path
