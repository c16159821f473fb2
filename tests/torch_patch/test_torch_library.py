"""What libtorch lets a patch replace, read off the library (ELF):
torch_patch/torch_library.py on the installed libtorch_cpu.so, and on
small libraries linked the ways that forbid it (-Bsymbolic, hidden or
protected visibility, -Bsymbolic-functions: compiled, so the compile tier)."""

import os
import subprocess
import sys

import pytest

from support.functions_reference import read_structs

from autograd_scons.buildenv.torch_flags import _torch_dir
from autograd_scons.torch_patch import libtorch_locals, torch_library
from autograd_scons.torch_patch.identity import torch_identity

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads ELF shared libraries (Linux)")


@linux
def test_libtorch_lets_every_function_be_replaced_and_keeps_some_helpers_local():
    facts = torch_library.read_facts(torch_library.library_path(_torch_dir()))
    # (torch's own header, found without importing torch: seconds of the fast tier)
    with open(os.path.join(_torch_dir(), "include", "torch", "csrc", "autograd", "generated", "Functions.h")) as f:
        classes = set(read_structs(f.read()))
    assert not facts.symbolic and facts.bound_locally == frozenset()
    assert facts.replaceable == classes   # 711 for 2.13.0, 712 for 2.14.1
    # FunctionsManual's helpers: most local, a few exported; a saved type's member kept local
    assert {"handle_r_to_c", "mul_tensor_backward", "kCudnnDoubleBackwardMsg", "TypeAndSize::zeros"} \
        <= set(facts.hidden_helpers)
    assert not {"copy_range", "any_variable_defined", "not_implemented"} & set(facts.hidden_helpers)
    identity = torch_identity(_torch_dir())
    assert len(facts.build_id) == 40 and identity["library"][1] == facts.build_id
    # .symtab locates each local helper, under the name a call through the installed header's declaration uses
    local = {libtorch_locals.source_name(n): (n, offset, size, data) for n, offset, size, data in facts.locals.symbols}
    assert facts.locals.present and {"handle_r_to_c", "mul_tensor_backward", "TypeAndSize::zeros"} <= set(local)
    assert local["handle_r_to_c"][0] == \
        "_ZN5torch8autograd9generated7details13handle_r_to_cEN3c1010ScalarTypeEN2at6TensorE"
    assert local["kCudnnDoubleBackwardMsg"][2:] == (8, True)   # a `const char*`, data
    assert not {"copy_range", "not_implemented"} & set(local)   # exported: linked to, not reached
    # the function the patch finds libtorch's base with is exported, in the dynamic table
    assert libtorch_locals.source_name(facts.locals.anchor[0]) in facts.exported_helpers


# A class shaped as libtorch's generated ones, in their namespace: its apply
# is what a patch replaces.
_CLASS = """
#include <vector>
namespace at { struct Tensor {}; }
namespace torch::autograd::generated {
struct %(visibility)s SinBackward0 {
  virtual ~SinBackward0();
  virtual std::vector<at::Tensor> apply(std::vector<at::Tensor>&& grads);
};
SinBackward0::~SinBackward0() = default;
std::vector<at::Tensor> SinBackward0::apply(std::vector<at::Tensor>&& grads) { return grads; }
SinBackward0* make() { return new SinBackward0(); }
}
"""


def _library(tmp_path, name, visibility="", flags=()):
    src = tmp_path / f"{name}.cpp"
    src.write_text(_CLASS % {"visibility": visibility})
    out = tmp_path / f"lib{name}.so"
    subprocess.run(["g++", "-std=c++17", "-fPIC", "-shared", "-O1", *flags, str(src), "-o", str(out)], check=True)
    return torch_library.read_facts(str(out))


@linux
@pytest.mark.compile
def test_libraries_that_bind_their_functions_to_themselves_are_seen(tmp_path):
    plain = _library(tmp_path, "plain")
    assert plain.replaceable == {"SinBackward0"} and not plain.symbolic
    assert _library(tmp_path, "symbolic", flags=["-Wl,-Bsymbolic"]).symbolic
    hidden = _library(tmp_path, "hidden", '__attribute__((visibility("hidden")))')
    assert hidden.replaceable == frozenset()   # not exported at all: nothing to replace
    for name, visibility, flags in (("protected", '__attribute__((visibility("protected")))', []),
                                    ("functions", "", ["-Wl,-Bsymbolic-functions"])):
        facts = _library(tmp_path, name, visibility, flags)
        assert facts.bound_locally == {"SinBackward0"} and facts.replaceable == frozenset(), name


@linux
def test_what_is_not_elf_is_said(tmp_path):
    path = tmp_path / "libtorch_cpu.so"
    path.write_bytes(b"#!/bin/sh\n" * 20)
    with pytest.raises(torch_library.ElfError, match="not a 64-bit little-endian ELF"):
        torch_library.read_facts(str(path))
    assert os.path.exists(path)
