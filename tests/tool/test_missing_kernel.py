"""A kernel that native_functions.yaml declares and no object defines in
`<ns>::native` is one located error at build time, before anything is
loaded (site_scons/autograd_scons/tool/kernel_check.py): found in another namespace by
its name before the link (which a kernel named as its op breaks: `multiple
definition` of the op's generated caller), or left undefined by the linked
library; the yaml line, the C++ signature, the namespace expected; not
`undefined symbol` at dlopen, nor `ld returned 1`."""

import pytest

from support.load_helpers import real_compiler, run

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


def _build(tmp_path, native, derivatives, kernels):
    (tmp_path / "nf.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(derivatives)
    (tmp_path / "kernels.cpp").write_text(kernels)
    call = {"name": "extension_cpp", "native_functions": str(tmp_path / "nf.yaml"),
            "derivatives": str(tmp_path / "d.yaml"), "sources": [str(tmp_path / "kernels.cpp")],
            "build_directory": str(tmp_path / "build")}
    env = real_compiler()
    proc = run(call, env, check=False, fresh=True, timeout=900)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "undefined symbol" not in out and "ld returned" not in out, out[-3000:]
    assert "site_scons" not in out.split("Error")[-1], out[-3000:]   # no traceback of the tool's frames
    return out


def test_kernel_in_the_wrong_namespace_is_a_located_build_error(tmp_path):
    out = _build(tmp_path, NATIVE, DERIVATIVES, KERNELS)
    assert f"{tmp_path / 'nf.yaml'}:3: entry 'extension_cpp::mul2': the CPU kernel 'mul2_cpu' is defined in " \
           "namespace extension_cpp (kernels.os), not in extension_cpp::native" in out, out[-3000:]
    assert "define `at::Tensor extension_cpp::native::mul2_cpu(const at::Tensor &)`" in out, out[-3000:]


def test_kernel_named_as_its_op_in_the_ops_namespace_is_located_before_the_link(tmp_path):
    """The second port's mistake: `nbw::mm2` defined where `nbw::native::mm2`
    is declared has the name and parameters of the op's generated caller,
    `nbw::mm2`: the link failed (`multiple definition`) before the check
    after it could say why."""
    native = "- func: nbw::mm2(Tensor a, Tensor b) -> Tensor\n  dispatch:\n    CPU: mm2\n"
    derivatives = "- name: mm2(Tensor a, Tensor b) -> Tensor\n  a: grad.mm(b.t())\n  b: a.t().mm(grad)\n"
    kernels = ("#include <ATen/ATen.h>\nnamespace nbw {\n"
               "at::Tensor mm2(const at::Tensor& a, const at::Tensor& b) { return a.mm(b); }\n}\n")
    out = _build(tmp_path, native, derivatives, kernels)
    assert f"{tmp_path / 'nf.yaml'}:3: entry 'nbw::mm2': the CPU kernel 'mm2' is defined in namespace nbw " \
           "(kernels.os), not in nbw::native" in out, out[-3000:]
    assert "multiple definition" not in out, out[-3000:]
