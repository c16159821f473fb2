"""Two one-op extensions, `aa::twice` (backward: grad * 2) and `bb::twice`
(grad * 3), each built as two libraries by one SConscript: `twice_default`
(no namespace=: the classes' namespace derives from the op namespace) and
`twice_shared` (both extensions in namespace `shared::autograd`, which
clash).  Written into a temporary folder and built with the real compiler
(not a test module itself)."""

import os
import textwrap

from support.scons_helpers import REPO, scons

_SCONSCRIPT = """\
Import("env")
env = env.Clone()
kernels = env.SharedObject("csrc/kernels.cpp")
libs = []
for name, ns in (("twice_default", None), ("twice_shared", "shared::autograd")):
    e = env.Clone()
    functions = e.AutogradFunctions("gen_" + name, native_functions="native_functions.yaml",
                                    derivatives="derivatives.yaml", namespace=ns,
                                    python=env.get("PYTHON", True),  # PYTHON=0: C++ alone
                                    pch=env["AUTOGRAD_PCH"])  # PCH=auto|0|1
    libs += e.SharedLibrary(name, functions + kernels, SHLIBPREFIX="")
Return("libs")
"""

_KERNELS = """\
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {
at::Tensor twice(const at::Tensor& self) { return self * 2; }
}  // namespace

TORCH_LIBRARY_IMPL(%(ns)s, CPU, m) { m.impl("twice", TORCH_FN(twice)); }
"""


def write(folder: str, ns: str, factor: int) -> str:
    """The extension `ns` whose backward multiplies by `factor`."""
    os.makedirs(os.path.join(folder, "csrc"), exist_ok=True)
    files = {"SConscript": _SCONSCRIPT,
             "native_functions.yaml": f"- func: {ns}::twice(Tensor self) -> Tensor\n",
             "derivatives.yaml": f"- name: twice(Tensor self) -> Tensor\n  self: grad * {factor}\n",
             "csrc/kernels.cpp": _KERNELS % {"ns": ns}}
    for rel, text in files.items():
        with open(os.path.join(folder, rel), "w") as f:
            f.write(textwrap.dedent(text))
    return folder


def build(root: str, *args: str) -> dict:
    """{(ns, "default"|"shared"): library path} for `aa` and `bb`, built
    under `root` (`args`: more scons arguments, e.g. PYTHON=0)."""
    libs = {}
    for ns, factor in (("aa", 2), ("bb", 3)):
        src = write(os.path.join(root, ns), ns, factor)
        out = os.path.join(root, "build-" + ns)
        # PCH=1: the session's shared prelude (support/scons_helpers.prelude_dir),
        # precompiled once: CPU by half for the second extension on (docs/testing.md)
        scons(REPO, "-j2", "OPT=-O0", "PCH=1", f"BUILD={out}", f"EXAMPLE={src}", *args)
        for kind in ("default", "shared"):
            libs[ns, kind] = os.path.join(out, "example", f"twice_{kind}.so")
    return libs
