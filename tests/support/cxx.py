"""Compiling generated C++ against the installed torch's headers, TU by TU
(tests/codegen/emit/functions/test_compile_torch_specs.py: syntax checks and lone objects, no
extension).  Building an extension goes through torch.utils.cpp_extension
(tests/codegen/engine/test_engine_roundtrip.py).

Not a test module.  Include paths come from `torch.utils.cpp_extension`;
C++20 and torch's libstdc++ ABI as for a torch 2.13 extension.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

CXX = os.environ.get("CXX", "g++")


def have_compiler() -> bool:
    return shutil.which(CXX) is not None


def torch_flags() -> list[str]:
    import torch
    from torch.utils import cpp_extension
    return (["-std=c++20", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]
            + [f"-I{p}" for p in cpp_extension.include_paths()])


@dataclass(frozen=True)
class Result:
    cmd: list
    returncode: int
    seconds: float
    errors: str

    def __str__(self) -> str:
        return f"{' '.join(self.cmd[-3:])}: exit {self.returncode} after {self.seconds:.0f} s\n{self.errors}"


def run(cmd: list[str], cwd: str | None = None) -> Result:
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    # -w silences torch's own header warnings; what remains is errors
    errors = "\n".join(line for line in p.stderr.splitlines() if "error" in line)[-6000:] or p.stderr[-3000:]
    return Result(cmd, p.returncode, time.perf_counter() - t, errors)


def run_all(cmds: list[list[str]], cwd: str | None = None, jobs: int = 2) -> list[Result]:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda c: run(c, cwd), cmds))
    for r in results:
        print(f"[{r.seconds:5.1f} s] {' '.join(r.cmd[-3:])}", file=sys.stderr)
    return results


def python_flags() -> list[str]:
    """The running Python's headers (torch/extension.h includes Python.h)."""
    import sysconfig
    return [f"-I{sysconfig.get_paths()['include']}"]
