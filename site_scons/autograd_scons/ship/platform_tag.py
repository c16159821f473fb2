"""The manylinux tag of a wheel's libraries, decided by auditwheel (PyPI
takes only manylinux_*/musllinux_* Linux wheels).

auditwheel's `show --json` reports two things: `sym_tag`, the newest
glibc / libstdc++ symbol versions the libraries use (what the manylinux
policy limits), and `overall_tag`, which also requires every linked
library to be a system one or bundled.  A torch extension links torch's
own libraries (libtorch_cpu.so, libc10.so, libc10_cuda.so, and CUDA's
runtime that torch's wheel depends on): they come from the torch the
wheel requires, so they are never bundled, the way
`auditwheel repair --exclude libtorch*.so` treats them.  The tag is
therefore `sym_tag`, accepted only when the libraries auditwheel would
ask to eliminate are torch's (TORCH_LIBS) and nothing else; any other
external library is one line naming it.
"""

import fnmatch
import json
import subprocess
import sys

from autograd_scons.base.errors import Error

# Libraries torch's wheels (and the nvidia-* wheels they require) provide.
TORCH_LIBS = ("libtorch*.so*", "libc10*.so*", "libshm*.so*", "libcudart.so.*", "libgomp*.so*")


class TagError(Error, ValueError):
    """One line (`str()`)."""


def is_torch_lib(name):
    return any(fnmatch.fnmatch(name, p) for p in TORCH_LIBS)


def check_elf(libraries):
    """TagError unless each of {name: bytes} is an ELF file: auditwheel
    passes over anything else, and would tag a wheel whose libraries it
    never read with its lowest policy (manylinux_2_5)."""
    for name, data in sorted(libraries.items()):
        if not data.startswith(b"\x7fELF"):
            raise TagError(f"{name} is not an ELF shared library: no manylinux tag can be checked for it "
                           "(--plat linux keeps linux_<arch>)")


def audit(wheel, python=None):
    """auditwheel's `show --json` report of `wheel` (a dict)."""
    cmd = [python or sys.executable, "-m", "auditwheel", "show", "--json", wheel]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise TagError(f"auditwheel could not run: {e}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        if "No module named auditwheel" in proc.stderr:
            raise TagError("a manylinux tag needs auditwheel (`pip install auditwheel`), or keep the platform "
                           "tag with --plat linux")
        raise TagError(f"auditwheel show {wheel}: {last}")
    return json.loads(proc.stdout)


def manylinux_tag(report):
    """The platform tag a wheel with auditwheel's `report` may carry, or
    TagError naming what stops it."""
    sym = report.get("sym_tag") or ""
    if not sym.startswith("manylinux_"):
        raise TagError(f"auditwheel finds no manylinux tag for the libraries' symbol versions ({sym or 'none'}): "
                       "build in a manylinux container (docs/shipping.md)")
    for flag in ("ucs2", "pyfpe", "unsupported_isa"):
        if report.get(flag):
            raise TagError(f"auditwheel: the libraries fail its {flag} check: no manylinux tag")
    others = sorted(n for n in report.get("external_libs") or {} if not is_torch_lib(n))
    eliminate = (report.get("policy_upgrades") or {}).get(sym, {}).get("libs_to_eliminate") or []
    others += sorted(n for n in eliminate if not is_torch_lib(n) and n not in others)
    if others:
        raise TagError(f"the libraries link {', '.join(others)}, which is neither torch's nor a manylinux "
                       "system library: a manylinux wheel would have to bundle it (auditwheel repair)")
    return sym
