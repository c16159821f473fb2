"""The names libtorch keeps local, reached through its own symbol table
(torch_patch/libtorch_locals.py, declarations.py): which names are usable
and why the others are not, what the installed headers declare without
defining, and, on a small library shaped as libtorch (compiled: the compile
tier), a patch's object calling its hidden function and reading its hidden
data through the generated TU, the load-time check refusing a library with
another build id, and the refusals at the link."""

import subprocess
import sys

import pytest

from autograd_scons.codegen.emit.aten_kernels.locals_cpp import render_locals
from autograd_scons.torch_patch import libtorch_locals as ll, reach_locals
from autograd_scons.torch_patch.declarations import declared_only
from autograd_scons.torch_patch.torch_library import read_facts

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads ELF (Linux)")

HEADER = """
#pragma once
#include <string>
namespace torch::autograd::generated::details {
extern const char* kMessage;   // data, declared only
// a comment with a call: fake_call(x);
struct TORCH_API IndexRangeGenerator {
  size_t size() { return i; }
 private:
  size_t i = 0;
};
inline int defined_inline(int x) { return x + 1; }
TORCH_API int exported_helper(int x);
int hidden_helper(int x, const std::string& s = "a;{b");
template <typename T>
T templated(T t, int n);
double only_inlined(double x);
double only_cloned(double x);
}  // namespace torch::autograd::generated::details
namespace torch::autograd {
struct TypeAndSize {
  TypeAndSize() = default;
  TypeAndSize(int n) : n(n) {}
  int zeros();
 private:
  int n = 0;
};
}
"""
DETAILS = "torch::autograd::generated::details"


def test_the_header_reader_keeps_the_names_declared_and_not_defined():
    assert declared_only(HEADER, DETAILS) == {"kMessage", "exported_helper", "hidden_helper", "templated",
                                              "only_inlined", "only_cloned"}
    assert declared_only(HEADER, "torch::autograd", members=True) == {"TypeAndSize::zeros"}


def _mangled(name: str, params: str = "i") -> str:
    return f"_ZN5torch8autograd9generated7details{len(name)}{name}E{params}"


def test_source_names_of_symbols():
    assert ll.source_name(_mangled("handle_r_to_c", "N3c1010ScalarTypeEN2at6TensorE")) == "handle_r_to_c"
    assert ll.source_name("_ZN5torch8autograd11TypeAndSize5zerosEv") == "TypeAndSize::zeros"
    assert ll.source_name(_mangled("f") + ".isra.0") == "f"
    assert ll.source_name("_ZN2at6native3addEv") == ""
    assert ll.components("_ZN5torch8autograd9generated7detailsL13_aminmax_dimsEv") == \
        (("torch", "autograd", "generated", "details", "_aminmax_dims"), True)


def test_each_name_without_a_usable_symbol_is_said_why():
    table = ll.LocalTable(True, ((_mangled("hidden_helper"), 0x1000, 40, False),),
                          (_mangled("only_cloned", "d"),), (_mangled("exported_helper"), 0x2000))
    declared = declared_only(HEADER, DETAILS)
    exported = frozenset({"exported_helper"})
    assert ll.unusable_names(table, 62, declared, exported) == {
        "kMessage": ll.INLINED_ONLY, "only_cloned": ll.CLONES_ONLY, "only_inlined": ll.INLINED_ONLY,
        "templated": ll.INLINED_ONLY}
    # the same on a machine the patch has no trampolines for
    assert ll.unusable_names(table, 183, declared, exported)["hidden_helper"] == ll.NO_TRAMPOLINE
    # a stripped library: every name it does not export
    stripped = ll.unusable_names(ll.LocalTable(False), 62, declared, exported)
    assert set(stripped) == declared - exported and set(stripped.values()) == {ll.STRIPPED}


def test_the_reaching_tu_defines_what_is_reached_and_nothing_else():
    text = render_locals([(_mangled("f"), "torch::autograd::generated::details::f", 0x10, 20, False),
                          (_mangled("k", ""), "torch::autograd::generated::details::k", 0x20, 8, True)],
                         (_mangled("exported_helper"), 0x30), "0aff")
    assert f"{_mangled('f')}:\n  jmp *autograd_scons_libtorch_locals+0(%rip)" in text
    assert "static_assert(sizeof(::torch::autograd::generated::details::k) == 8" in text
    assert "constexpr unsigned char kBuildId[] = {0x0a, 0xff};" in text
    assert "#include <torch/csrc/autograd/FunctionsManual.h>" in text   # (for the data's size check)
    assert "jmp" not in render_locals([], ("", 0), "")


# ----------------------------------------------------------- a small libtorch

_TORCH = r"""
#include <string>
namespace torch::autograd::generated::details {
__attribute__((visibility("hidden"))) double twice(double x) { return 2 * x + BUILD; }
__attribute__((visibility("hidden"))) const char* kMessage = "libtorch's message";
__attribute__((visibility("hidden"))) double only_cloned(double x) __asm__("%(clone)s");
double only_cloned(double x) { return x; }
int exported_helper(int x) { return x; }
}
"""
_HEADER = """
#pragma once
namespace torch::autograd::generated::details {
extern const char* kMessage;
double twice(double x);
double only_cloned(double x);
int exported_helper(int x);
}
"""
_PATCH = r"""
#include <torch/csrc/autograd/FunctionsManual.h>
#include <cstring>
namespace d = torch::autograd::generated::details;
extern "C" double patched(double x) {
  return d::twice(x) + (std::strcmp(d::kMessage, "libtorch's message") == 0 ? 1000 : 0) + USE_CLONE +
         d::exported_helper(0);
}
"""
_MAIN = r"""
#include <cstdio>
extern "C" double patched(double);
int main() { std::printf("%g\n", patched(3)); return 0; }
"""


def _cxx(*args, cwd):
    subprocess.run(["g++", "-std=c++17", "-O1", *map(str, args)], check=True, cwd=cwd)


def _small_torch(tmp, build=0):
    """lib/libtorch_cpu.so (BUILD: a constant, so another value is another build id) and its header."""
    (tmp / "lib").mkdir(exist_ok=True)
    (tmp / "torch.cpp").write_text(_TORCH % {"clone": _mangled("only_cloned", "d") + ".isra.0"})
    _cxx("-fPIC", "-shared", f"-DBUILD={build}", "-Wl,--build-id", "torch.cpp", "-o", "lib/libtorch_cpu.so", cwd=tmp)
    header = tmp / "include" / "torch" / "csrc" / "autograd" / "FunctionsManual.h"
    header.parent.mkdir(parents=True, exist_ok=True)
    header.write_text(_HEADER)
    return read_facts(str(tmp / "lib" / "libtorch_cpu.so"))


def _patch(tmp, facts, use_clone=False):
    """libpatch.so: an object calling the small libtorch's hidden function and data, and the reaching TU."""
    _cxx("-fPIC", "-c", "-Iinclude", f"-DUSE_CLONE={'d::only_cloned(0)' if use_clone else 0}", "patch.cpp",
         "-o", "patch.o", cwd=tmp)
    found = reach_locals.reached([str(tmp / "patch.o")], facts.locals, facts.machine)
    (tmp / "locals.cpp").write_text(render_locals([(r.mangled, r.qualified, r.offset, r.size, r.is_data)
                                                   for r in found], facts.locals.anchor, facts.build_id))
    _cxx("-fPIC", "-Iinclude", "-shared", "-Wl,-z,defs", "patch.o", "locals.cpp", "-Llib", "-ltorch_cpu",
         "-Wl,-rpath,$ORIGIN/lib", "-o", "libpatch.so", cwd=tmp)
    return found


@linux
@pytest.mark.compile
def test_a_patch_calls_libtorchs_hidden_function_and_reads_its_data(tmp_path):
    (tmp_path / "patch.cpp").write_text(_PATCH)
    (tmp_path / "main.cpp").write_text(_MAIN)
    facts = _small_torch(tmp_path)
    assert set(ll.unusable_names(facts.locals, facts.machine, frozenset({"twice", "kMessage", "only_cloned"}),
                                 frozenset(facts.exported_helpers))) == {"only_cloned"}
    found = _patch(tmp_path, facts)
    assert sorted((r.qualified, r.is_data) for r in found) == [
        ("torch::autograd::generated::details::kMessage", True), ("torch::autograd::generated::details::twice", False)]
    _cxx("main.cpp", "-L.", "-lpatch", "-Llib", "-ltorch_cpu", "-Wl,-rpath,$ORIGIN:$ORIGIN/lib", "-o", "main",
         cwd=tmp_path)
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True)
    assert (run.returncode, run.stdout, run.stderr) == (0, "1006\n", "")
    # another build of the library (another build id): the offsets are not used; a call says so and aborts
    _small_torch(tmp_path, build=1)
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True)
    assert run.returncode != 0 and run.stdout == ""
    assert "cannot reach libtorch's local definitions: the libtorch_cpu.so loaded is not the one the patch was " \
           "built for (another GNU build id)" in run.stderr
    assert "could not reach as it loaded" in run.stderr


@linux
@pytest.mark.compile
def test_a_name_libtorch_has_only_as_a_clone_is_refused_at_the_link(tmp_path):
    (tmp_path / "patch.cpp").write_text(_PATCH)
    facts = _small_torch(tmp_path)
    with pytest.raises(reach_locals.LocalError, match=r"uses .*only_cloned.*, which libtorch_cpu.so has only compiler "
                                            r"clones of it .*--functions-manual"):
        _patch(tmp_path, facts, use_clone=True)


@linux
@pytest.mark.compile
def test_a_stripped_library_locates_nothing_and_every_name_it_keeps_local_is_refused(tmp_path):
    _small_torch(tmp_path)
    library = tmp_path / "lib" / "libtorch_cpu.so"
    subprocess.run(["strip", "--strip-all", str(library)], check=True)
    facts = read_facts(str(library))
    assert facts.locals == ll.LocalTable(False) and facts.build_id   # (the dynamic table and build id stay)
    declared = frozenset({"twice", "kMessage", "only_cloned", "exported_helper"})
    assert ll.unusable_names(facts.locals, facts.machine, declared, frozenset(facts.exported_helpers)) == \
        {"twice": ll.STRIPPED, "kMessage": ll.STRIPPED, "only_cloned": ll.STRIPPED}
