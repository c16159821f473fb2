"""The stable target's symbol audit, run after each link of a stable library:
the library may import only PyTorch's stable C shims and the C/C++ runtime,
else it would load in the one torch it was built against and no other.

The rule, on `nm -D --undefined-only` of the library:
- allowed: `aoti_torch_*` and `torch_*` (C names: the stable shims of
  libtorch_cpu; a C++ name is mangled, `_Z...`, so never matches);
- allowed: a symbol bound to a version of the C/C++ runtime (`@GLIBC_*`,
  `@GLIBCXX_*`, `@CXXABI_*`, `@GCC_*`: libc, libm, libstdc++, libgcc_s);
- allowed: an unversioned name of the C++ runtime (`std::`, its typeinfo
  and vtables, `operator new`/`delete`, `__cxa_*`): a link that also names
  libc10 binds those to libc10's copies, without a version, and any
  libstdc++ resolves them at load;
- allowed: a weak reference (`w`/`v`: `__gmon_start__`, `_ITM_*`), which
  may stay unresolved;
- anything else (`at::`, `c10::`, `torch::` C++ names, a kernel declared and
  never defined) fails the build in one line naming the demangled symbol
  and the object that references it.

    problem = audit("lib.so", ["a.os", "b.os"])   # None, or the line
"""

from __future__ import annotations

import re
import subprocess
from typing import Optional, Sequence

_SHIM = re.compile(r"(aoti_torch_|torch_)\w*$")
_RUNTIME_VERSION = re.compile(r"@{1,2}(GLIBC|GLIBCXX|CXXABI|GCC)_[\w.]+$")


def _nm(args: Sequence[str]) -> list[str]:
    done = subprocess.run(list(args), capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"{' '.join(args)}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'failed'}")
    return done.stdout.splitlines()


_CXX_RUNTIME = ("std::", "typeinfo for std::", "typeinfo name for std::", "vtable for std::", "VTT for std::",
                "operator new", "operator delete", "__cxa_", "__gxx_personality", "_Unwind_")


def disallowed(library: str, nm: str = "nm") -> list[tuple[str, str]]:
    """(symbol as nm prints it, demangled) of each undefined dynamic symbol
    of the library the rule refuses, in nm's order."""
    found = []
    for line in _nm([nm, "-D", "--undefined-only", library]):
        parts = line.split()
        if len(parts) < 2 or parts[-2] in ("w", "v"):
            continue
        symbol = parts[-1]
        if _RUNTIME_VERSION.search(symbol) or _SHIM.match(symbol.split("@")[0]):
            continue
        found.append(symbol)
    names = _demangled([s.split("@")[0] for s in found])
    return [(s, d) for s, d in zip(found, names) if not d.startswith(_CXX_RUNTIME)]


def _demangled(symbols: list[str]) -> list[str]:
    """c++filt of each symbol (one run), or the symbols as they are without it."""
    if not symbols:
        return []
    try:
        done = subprocess.run(["c++filt"], input="\n".join(symbols) + "\n", capture_output=True, text=True)
    except OSError:
        return symbols
    lines = done.stdout.splitlines()
    return lines if done.returncode == 0 and len(lines) == len(symbols) else symbols


def referencing_object(symbol: str, objects: Sequence[str], nm: str = "nm") -> Optional[str]:
    """The first of `objects` whose undefined symbols include `symbol`."""
    for obj in objects:
        try:
            if any(line.split()[-1] == symbol for line in _nm([nm, "--undefined-only", obj]) if line.split()):
                return obj
        except OSError:
            continue
    return None


def audit(library: str, objects: Sequence[str], nm: str = "nm", target: str = "",
          declared: Sequence[str] = ()) -> Optional[str]:
    """None when the library imports only what the rule allows; else one line
    about the first symbol refused, and how many others there are.
    `declared`: the kernels native_functions.yaml's `dispatch:` declares
    (`ns::native::name(`): one of them undefined is said as a missing kernel."""
    refused = disallowed(library, nm)
    if not refused:
        return None
    missing = [(s, d) for s, d in refused if d.startswith(tuple(declared))] if declared else []
    symbol, name = (missing or refused)[0][0].split("@")[0], (missing or refused)[0][1]
    obj = referencing_object(symbol, objects, nm)
    more = f" (and {len(refused) - 1} other symbol{'s' if len(refused) > 2 else ''})" if len(refused) > 1 else ""
    if missing:
        return (f"{library}: the kernel '{name}' that native_functions.yaml's dispatch: declares is defined by "
                f"no object linked into it{more} (referenced by {obj or 'the registration'})")
    return (f"{obj or library}: stable-ABI audit: references '{name}'{more}, which is neither "
            f"a stable C shim (aoti_torch_*, torch_*) nor the C/C++ runtime: a library built for "
            f"torch>={target or '?'} must reach torch through torch/csrc/stable/ only")
