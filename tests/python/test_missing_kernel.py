"""A kernel that native_functions.yaml declares and no object defines is one
located error at build time, before anything is loaded (codegen/build_folder/kernel_check.py,
run after linking): the yaml line, the C++ signature, the namespace expected;
not `undefined symbol` at dlopen."""

import pytest

from support.load_helpers import environ, run

pytestmark = pytest.mark.compile

NATIVE = """\
- func: extension_cpp::mul2(Tensor a) -> Tensor
  dispatch:
    CPU: mul2_cpu
"""
DERIVATIVES = "- name: mul2(Tensor a) -> Tensor\n  a: grad * 2\n"
# In the wrong namespace: extension_cpp::, not extension_cpp::native::
KERNELS = """\
#include <ATen/ATen.h>
namespace extension_cpp {
at::Tensor mul2_cpu(const at::Tensor& a) { return a * 2; }
}
"""


def test_kernel_in_the_wrong_namespace_is_a_located_build_error(tmp_path):
    (tmp_path / "nf.yaml").write_text(NATIVE)
    (tmp_path / "d.yaml").write_text(DERIVATIVES)
    (tmp_path / "kernels.cpp").write_text(KERNELS)
    call = {"name": "extension_cpp", "native_functions": str(tmp_path / "nf.yaml"),
            "derivatives": str(tmp_path / "d.yaml"), "sources": [str(tmp_path / "kernels.cpp")],
            "build_directory": str(tmp_path / "build")}
    env = environ(cxx="g++")
    env["MAX_JOBS"] = "2"
    proc = run(call, env, check=False, fresh=True, timeout=900)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"{tmp_path / 'nf.yaml'}:3: entry 'extension_cpp::mul2': the CPU kernel 'mul2_cpu' is declared here " \
           "but no object defines it" in out, out[-3000:]
    assert "extension_cpp::native::mul2_cpu(const at::Tensor &" in out and "(in namespace extension_cpp::native)" in out
    assert "undefined symbol" not in out, out[-3000:]
    assert "site_scons" not in out.split("Error")[-1], out[-3000:]   # no traceback of the tool's frames
