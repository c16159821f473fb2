"""The stable target's symbol audit (tool/symbol_audit.py) on a tiny library
built by g++ from a file without torch's headers (0.3 s): the stable shims
and the C/C++ runtime pass; a `c10::` reference is named, demangled, with
the object that references it, in one line.  (The audit inside a real
stable build, with a planted `at::` call: tests/example/test_stable_example.py.)"""

import os
import shutil
import subprocess

import pytest

from autograd_scons.tool.symbol_audit import audit

SOURCE = """
#include <string>
extern "C" int aoti_torch_get_dim(void*, long*);
extern "C" int torch_call_dispatcher(const char*, const char*, void*, unsigned long);
%s
std::string stable_kernel(void* t) {
  long d = 0;
  aoti_torch_get_dim(t, &d);
  torch_call_dispatcher("aten::cos", "", nullptr, 0);
  %s
  return std::to_string(d);
}
"""
PLANTED = ("namespace c10 { void* planted_call(int); }", "c10::planted_call(3);")


def build(tmp_path, planted):
    src = tmp_path / "kernel.cpp"
    src.write_text(SOURCE % (PLANTED if planted else ("", "")))
    obj, lib = tmp_path / "kernel.o", tmp_path / "libk.so"
    subprocess.run(["g++", "-fPIC", "-O1", "-c", str(src), "-o", str(obj)], check=True)
    subprocess.run(["g++", "-shared", str(obj), "-o", str(lib)], check=True)
    return str(lib), str(obj)


@pytest.mark.compile
@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_the_shims_and_the_runtime_pass(tmp_path):
    lib, obj = build(tmp_path, planted=False)
    assert audit(lib, [obj]) is None


@pytest.mark.compile
@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_a_c10_reference_fails_in_one_line_naming_symbol_and_object(tmp_path):
    lib, obj = build(tmp_path, planted=True)
    line = audit(lib, [obj], target="2.10")
    assert line is not None and "\n" not in line
    assert line.startswith(f"{obj}: stable-ABI audit: references 'c10::planted_call(int)',")
    assert "torch>=2.10" in line


# What `nm -D --undefined-only` prints of a library (the fast tier's stand-in nm).
NM_LIBRARY = """\
                 w __gmon_start__
                 U aoti_torch_get_dim
                 U torch_call_dispatcher
                 U _ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE10_M_disposeEv@GLIBCXX_3.4.21
                 U _ZNOSt7__cxx1115basic_stringbufIcSt11char_traitsIcESaIcEE3strEv
                 U memcpy@GLIBC_2.14
                 U _Unwind_Resume@GCC_3.0
%s"""


@pytest.mark.parametrize("extra, refused", [
    ("", None),
    ("                 U _ZN2at4_ops3cos4callERKNS_6TensorE\n", "at::_ops::cos::call(at::Tensor const&)"),
    ("                 U _ZN3c106detail14torchCheckFailEPKcS2_jS2_\n",
     "c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*)"),
])
def test_the_rule(tmp_path, extra, refused):
    nm = tmp_path / "nm"
    (tmp_path / "lib.txt").write_text(NM_LIBRARY % extra)
    (tmp_path / "obj.txt").write_text(extra)
    nm.write_text(f"#!/bin/sh\ncase \"$1\" in -D) cat {tmp_path}/lib.txt;; *) cat {tmp_path}/obj.txt;; esac\n")
    os.chmod(nm, 0o755)
    line = audit("lib.so", ["a.o"], nm=str(nm), target="2.10")
    if refused is None:
        assert line is None
    else:
        assert line.startswith(f"a.o: stable-ABI audit: references '{refused}', ")


def test_a_declared_kernel_no_object_defines_is_said_as_such(tmp_path):
    nm = tmp_path / "nm"
    missing = "                 U _ZN9stableops6native7mul_cpuERKN5torch6stable6TensorES5_\n"
    (tmp_path / "lib.txt").write_text(NM_LIBRARY % ("                 U _ZN2at4_ops3cos4callERKNS_6TensorE\n" + missing))
    (tmp_path / "obj.txt").write_text(missing)
    nm.write_text(f"#!/bin/sh\ncase \"$1\" in -D) cat {tmp_path}/lib.txt;; *) cat {tmp_path}/obj.txt;; esac\n")
    os.chmod(nm, 0o755)
    line = audit("lib.so", ["registration.os"], nm=str(nm), declared=["stableops::native::mul_cpu("])
    assert line == ("lib.so: the kernel 'stableops::native::mul_cpu(torch::stable::Tensor const&, "
                    "torch::stable::Tensor const&)' that native_functions.yaml's dispatch: declares is defined "
                    "by no object linked into it (and 1 other symbol) (referenced by registration.os)")
