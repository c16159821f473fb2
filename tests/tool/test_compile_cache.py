"""torch.compile's on-disk caches never serve a backward compiled against
another build's formulas (docs/failures.md, "torch.compile's caches").

AOTAutogradCache and inductor's FX graph cache key a compiled graph by its
FX graph and torch's config: an extension's op is keyed by its name, not by
the C++ behind it.  A one-op extension (`cachex::twice`, kernel `self * 2`)
is built with `scons` and loaded by `torch.ops.load_library` (README's
flow) in fresh processes sharing one TORCHINDUCTOR_CACHE_DIR, each taking
the gradient of a torch.compile'd (inductor) function of the op against
eager.  Its formula times 3 must give the new gradient, not the cached old
one; the formula put back (the same generated code) must hit the entries
the first build saved.  The real compiler, and inductor's own C++
compiles: compile tier.  (The same specs in another folder give the same
digest: tests/codegen/emit/test_cache_key.py.)
"""

import json
import os
import subprocess
import sys

import pytest

from support import proof_share
from support.scons_helpers import REPO, compiled, scons
from support.scenarios import edit

# Under torch 2.13 in one commit's CI in three; the cuda tier runs this
# module under 2.14.1 in another (tests/cuda/test_cuda_tier.py), in a clone
# without git, where the mark runs it.
pytestmark = [pytest.mark.compile, proof_share.in_turn(1, "this module")]

_NF = """\
- func: cachex::twice(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: twice
"""
DERIVATIVES = "- name: twice(Tensor self) -> Tensor\n  self: grad * 2\n"
FORMULA, TIMES_3 = "self: grad * 2", "self: grad * 6"
_KERNELS = """\
#include <ATen/ATen.h>

#include "ops/cachex_twice.h"

namespace cachex::native {
at::Tensor twice(const at::Tensor& self) { return self * 2; }
}  // namespace cachex::native
"""
_SCONSCRIPT = """\
Import("env")
env = env.Clone()
functions = env.AutogradFunctions("gen", native_functions="native_functions.yaml",
                                  derivatives="derivatives.yaml", python=False)
lib = env.SharedLibrary("cachex", functions + env.Glob("csrc/*.cpp", source=True), SHLIBPREFIX="")
Return("lib")
"""

# argv: the library.  Compiles f with inductor (AOTAutograd's cache holds
# the joint graph's backward) and prints its gradient, eager's and the
# AOTAutograd cache's counters.
_RUN = r"""
import json, sys, torch
from torch._dynamo.utils import counters
torch.ops.load_library(sys.argv[1])

def f(x):
    return torch.ops.cachex.twice(x * 1.0).sin()

x = torch.linspace(0.1, 0.6, 6, dtype=torch.double).reshape(2, 3).requires_grad_()
e = x.detach().clone().requires_grad_()
torch.compile(f, backend="inductor", fullgraph=True)(x).sum().backward()
f(e).sum().backward()
print(json.dumps({"compiled": x.grad.tolist(), "eager": e.grad.tolist(),
                  "aot": dict(counters["aot_autograd"]), "tag": torch.compiler.config.cache_key_tag}))
"""


# argv: the library, loaded before torch is imported; prints the tag torch then has.
_BEFORE_TORCH = r"""
import ctypes, json, sys
ctypes.CDLL(sys.argv[1])
import torch
print(json.dumps({"tag": torch.compiler.config.cache_key_tag}))
"""


def write(folder):
    os.makedirs(os.path.join(folder, "csrc"))
    for rel, text in (("SConscript", _SCONSCRIPT), ("native_functions.yaml", _NF),
                      ("derivatives.yaml", DERIVATIVES), ("csrc/kernels.cpp", _KERNELS)):
        with open(os.path.join(folder, rel), "w") as f:
            f.write(text)
    return folder


def build(src, out):
    """`scons` of the extension in `src` into `out`: (library, objects compiled)."""
    proc = scons(REPO, "-j2", "OPT=-O0", f"BUILD={out}", f"EXAMPLE={src}")
    return os.path.join(out, "example", "cachex.so"), compiled(proc.stdout)


def run(lib, cache, script=_RUN):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHINDUCTOR_", "TORCH_COMPILE_"))}
    env["TORCHINDUCTOR_CACHE_DIR"] = cache
    proc = subprocess.run([sys.executable, "-c", script, lib], capture_output=True, text=True, env=env,
                          timeout=900)
    assert proc.returncode == 0 and "autograd_functions" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def close(a, b):
    return all(abs(p - q) < 1e-12 for ra, rb in zip(a, b) for p, q in zip(ra, rb))


def test_an_edited_formula_misses_and_the_same_code_hits_the_compile_cache(tmp_path):
    src, cache = write(str(tmp_path / "src")), str(tmp_path / "inductor-cache")
    lib, _ = build(src, str(tmp_path / "build"))
    first = run(lib, cache)
    assert close(first["compiled"], first["eager"]), first
    assert first["aot"].get("autograd_cache_saved") == 1, first["aot"]   # the cache is in play

    edit(os.path.join(src, "derivatives.yaml"), FORMULA, TIMES_3)
    _, objects = build(src, str(tmp_path / "build"))
    edited = run(lib, cache)
    assert close(edited["eager"], [[3 * g for g in row] for row in first["eager"]])
    # the old build's backward, served from the cache, would be first["compiled"] (exit 0)
    assert close(edited["compiled"], edited["eager"]), edited
    assert edited["aot"].get("autograd_cache_hit") is None, edited["aot"]
    assert edited["tag"] != first["tag"]
    # the formula's edit TU, and the digest's
    assert len(objects) == 2 and objects[0] == "cache_key.os" and objects[1].startswith("edited_"), objects

    edit(os.path.join(src, "derivatives.yaml"), TIMES_3, FORMULA)
    build(src, str(tmp_path / "build"))
    back = run(lib, cache)   # the generated code is the first build's again: its entries serve
    assert back["tag"] == first["tag"] and back["aot"].get("autograd_cache_hit") == 1, back
    assert close(back["compiled"], first["eager"]) and close(back["eager"], first["eager"]), back

    # loaded before torch (ctypes): the tag waits in the variable torch reads it from on import
    assert run(lib, cache, _BEFORE_TORCH)["tag"] == first["tag"]


# The same op, its backward written by a helper of an `includes=` header and
# its kernel by a helper of the kernel's own header: sources the generated
# text does not hold.
_HELPERS_H = """\
#pragma once
#include <ATen/ATen.h>
namespace cachex {
inline at::Tensor twice_backward(const at::Tensor& grad) { return grad * 2; }
}  // namespace cachex
"""
_KERNEL_H = """\
#pragma once
#include <ATen/ATen.h>
inline at::Tensor doubled(const at::Tensor& self) { return self * 2; }
"""
_KERNELS_WITH_HEADER = _KERNELS.replace('#include "ops/cachex_twice.h"', '#include "ops/cachex_twice.h"\n#include "kernel.h"') \
    .replace("return self * 2;", "return doubled(self);")


def write_with_headers(folder):
    write(folder)
    os.makedirs(os.path.join(folder, "include", "cachex"))
    for rel, text in (("include/cachex/helpers.h", _HELPERS_H), ("csrc/kernel.h", _KERNEL_H),
                      ("csrc/kernels.cpp", _KERNELS_WITH_HEADER),
                      ("derivatives.yaml", DERIVATIVES.replace("grad * 2", "cachex::twice_backward(grad)")),
                      ("SConscript", _SCONSCRIPT.replace('derivatives="derivatives.yaml",',
                                                         'derivatives="derivatives.yaml", '
                                                         'includes=["cachex/helpers.h"],')
                       .replace("env = env.Clone()", 'env = env.Clone()\nenv.Append(CPPPATH=["include"])'))):
        with open(os.path.join(folder, rel), "w") as f:
            f.write(text)
    return folder


def test_every_source_of_the_library_is_in_the_tag(tmp_path):
    """An edit of an `includes=` header (the backward's helper), of the
    kernel's source and of a header it includes: each time a new process
    sharing the cache directory gets the new build's gradient (the tag
    changed), never the backward the cache holds from the build before
    (issue 52: the `includes=` header's edit gave the old gradient, exit 0)."""
    src, cache, out = write_with_headers(str(tmp_path / "src")), str(tmp_path / "inductor-cache"), str(tmp_path / "b")
    lib, _ = build(src, out)
    before = run(lib, cache)
    assert close(before["compiled"], before["eager"]), before
    edits = [("include/cachex/helpers.h", "return grad * 2;", "return grad * 6;"),
             ("csrc/kernels.cpp", "return doubled(self);", "return doubled(self) * 1.5;"),
             ("csrc/kernel.h", "return self * 2;", "return self * 4;")]
    for rel, old, new in edits:
        edit(os.path.join(src, rel), old, new)
        _, objects = build(src, out)
        assert "cache_key.os" in objects, (rel, objects)
        after = run(lib, cache)
        assert after["tag"] != before["tag"], rel
        assert not close(after["eager"], before["eager"]), rel   # the edit changed the gradient
        assert close(after["compiled"], after["eager"]), (rel, after)
        before = after
