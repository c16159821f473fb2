"""How an op kernel file registers its op: the schema and each kernel.

Not with `TORCH_LIBRARY_FRAGMENT`/`TORCH_LIBRARY_IMPL`, whose static
initialisers run once per copy of the file linked in: while an edited op
kernel is compiled in an edit TU, its old text may stay in its bucket, the
edit TU's definitions overriding it at link (codegen/engine/buckets.py), and both
copies' initialisers would register.  Here the registration is a function
of external linkage, `register_<stem>()`, run once behind a static guard;
each copy's initialiser calls it, and the linker keeps one definition, the
edit TU's.

A CUDA kernel (and a CUDA Autocast kernel) is registered unless the build defines
`AUTOGRAD_EXT_WITHOUT_CUDA_KERNELS` (site_scons/autograd_scons/buildenv/cuda_flags.py does, when it
leaves the `.cu` sources out: a CPU-only torch, `CUDA=0`): the registration
would otherwise refer to a kernel no object defines.  Opt-out, not opt-in,
so that a build that knows nothing of it keeps registering its CUDA kernels
(and a missing one is a load error naming it, never a silent omission).
"""

from __future__ import annotations

from typing import Any

from ...templates import load, string_literal
from ..options import EmitOptions

WITHOUT_CUDA = "AUTOGRAD_EXT_WITHOUT_CUDA_KERNELS"  # site_scons/autograd_scons/buildenv/cuda_flags.py defines it
_REGISTRATION = load("registration.cpp")
# Kernels for CUDA: the extension's own, and its ops' CUDA autocast (emit/op_kernels/autocast.py).
_CUDA_KEYS = ("CUDA", "AutocastCUDA")


def registration(unit: Any, opts: EmitOptions, impls: list[tuple[str, str]]) -> list[str]:
    """`unit`'s registration: its schema, and each (dispatch key, kernel) of `impls`."""
    f = unit.func
    ns = string_literal(f.namespace)
    libs = [f"      static torch::Library def_lib(torch::Library::FRAGMENT, {ns}, std::nullopt, __FILE__, __LINE__);"]
    calls = [f"      def_lib.def({string_literal(str(f.func))});"]
    for key, fn in impls:
        lib = [f"      static torch::Library {key}_lib(torch::Library::IMPL, {ns}, c10::DispatchKey::{key}, "
               "__FILE__, __LINE__);"]
        call = [f"      {key}_lib.impl({string_literal(str(f.func.name))}, TORCH_FN({fn}));"]
        if key in _CUDA_KEYS:
            lib, call = _unless_without_cuda(lib), _unless_without_cuda(call)
        libs += lib
        calls += call
    # (the holes are at column 0: the CUDA guards are preprocessor lines)
    return _REGISTRATION.lines(ns=opts.ns, stem=unit.stem, libraries=libs, calls=calls,
                               op=string_literal(f"{f.namespace}::{f.func}"))


def _unless_without_cuda(lines: list[str]) -> list[str]:
    return [f"#ifndef {WITHOUT_CUDA}", *lines, f"#endif  // {WITHOUT_CUDA}"]
