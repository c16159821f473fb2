"""The callers of an extension's own ops (codegen/emit/op_kernels/callers.py): each op's
header declares `<ns>::<name>(...)` with the dispatcher's signature, its TU
defines it through the op's typed handle, and a Function or Autograd kernel
whose formulas call one includes that op's header, and only those (its
unit's key names them: an op that appears regenerates the units that call
it, nothing else).  Generator only; the example builds and runs them
(tests/example/test_callers_dispatch.py)."""

import re

from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.engine import incremental
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.codegen.engine.units import Kind, load_units

OPTS = EmitOptions(namespace="ext::autograd")
NATIVE = """\
- func: ext::fwd(Tensor self, SymInt n) -> Tensor
  dispatch:
    CPU: fwd_cpu
- func: ext::fwd_backward(Tensor grad_output, SymInt n) -> Tensor
- func: ext::other(Tensor self) -> Tensor
- func: ext::scale.out(Tensor self, Scalar alpha, *, Tensor(a!) out) -> ()
- func: ext::thread.local(Tensor self) -> Tensor
- func: ext::native(Tensor self) -> Tensor
- func: ext::autograd(Tensor self) -> Tensor
"""
DERIVATIVES = """\
- name: fwd(Tensor self, SymInt n) -> Tensor
  self: ext::fwd_backward(grad, n)
  result: ext::fwd(self_t, n)
- name: fwd_backward(Tensor grad_output, SymInt n) -> Tensor
  grad_output: ext::fwd(grad, n)
- name: other(Tensor self) -> Tensor
  self: grad * 2
"""


def specs(tmp_path, native=NATIVE, derivatives=DERIVATIVES):
    nf, dv = tmp_path / "native_functions.yaml", tmp_path / "derivatives.yaml"
    nf.write_text(native)
    dv.write_text(derivatives)
    return str(nf), str(dv)


def rendered(tmp_path, **kw):
    units = load_units(*specs(tmp_path, **kw))
    files = {}
    for u in units:
        files.update(u.render(OPTS))
    return {u.name: u for u in units}, files


def test_each_op_header_declares_its_caller_and_its_tu_defines_it(tmp_path):
    _, files = rendered(tmp_path)
    h, cpp = files["ops/ext_fwd.h"], files["ops/ext_fwd.cpp"]
    assert re.search(r"namespace ext \{\n\n//.*\n__attribute__\(\(visibility\(\"hidden\"\)\)\) "
                     r"at::Tensor fwd\(const at::Tensor & self, c10::SymInt n\);", h)
    assert "at::Tensor fwd_cpu(const at::Tensor & self, c10::SymInt n);" in h   # and its kernel, as before
    assert ('.findSchemaOrThrow("ext::fwd", "")\n      .typed<at::Tensor(const at::Tensor &, c10::SymInt)>();'
            in cpp)
    assert "at::Tensor fwd(const at::Tensor & self, c10::SymInt n) {\n  return ::ext::autograd::ext_fwd_handle()" \
           ".call(self, n);\n}" in cpp
    # an overload: the op's C++ name without its namespace; the handle finds the overload
    out_h, out_cpp = files["ops/ext_scale_out.h"], files["ops/ext_scale_out.cpp"]
    assert "void scale_out(const at::Tensor & self, const at::Scalar & alpha, at::Tensor & out);" in out_h
    assert '.findSchemaOrThrow("ext::scale", "out")' in out_cpp
    assert "return ::ext::autograd::ext_scale_out_handle().call(self, alpha, out);" in out_cpp


def test_no_caller_where_its_name_cannot_be_a_function_of_the_namespace(tmp_path):
    _, files = rendered(tmp_path)
    for stem in ("ext_thread_local", "ext_native", "ext_autograd"):   # a keyword; namespaces it opens
        assert "__attribute__" not in files[f"ops/{stem}.h"] and "_handle()" not in files[f"ops/{stem}.cpp"]
    assert "at::Tensor other(const at::Tensor & self);" in files["ops/ext_other.h"]


def test_a_formula_that_calls_an_op_includes_its_header_and_no_other(tmp_path):
    units, files = rendered(tmp_path)
    assert units["FwdBackward0"].callees == ("ext_fwd_backward",)
    assert units["FwdBackwardBackward0"].callees == ("ext_fwd",)
    assert units["OtherBackward0"].callees == ()
    assert units["ext::fwd"].callees == ("ext_fwd",)   # its forward formula calls the op itself
    includes = lambda text: re.findall(r'#include "(\.\./ops/[^"]+)"', text)  # noqa: E731
    assert includes(files["functions/FwdBackward0.cpp"]) == ["../ops/ext_fwd_backward.h"]
    assert includes(files["functions/FwdBackwardBackward0.cpp"]) == ["../ops/ext_fwd.h"]
    assert includes(files["functions/OtherBackward0.cpp"]) == []
    assert '#include "ext_fwd.h"' in files["ops/ext_fwd.cpp"]


def test_without_kernels_there_are_no_callers_to_include(tmp_path):
    units = load_units(*specs(tmp_path), kernels=False)
    assert all(u.callees == () for u in units) and all(u.kind is Kind.FUNCTION for u in units)


def test_an_op_that_appears_regenerates_the_function_that_calls_it_and_no_other(tmp_path):
    """Its header's include is part of the calling Function's key: before the
    op exists the formula names nothing of ours (the compiler would say so),
    after, exactly that Function is rendered again, with the include."""
    without = NATIVE.replace("- func: ext::fwd_backward(Tensor grad_output, SymInt n) -> Tensor\n", "")
    nf, dv = specs(tmp_path, native=without,
                   derivatives=DERIVATIVES.split("- name: fwd_backward")[0] + "- name: other(Tensor self) -> Tensor\n"
                   "  self: grad * 2\n")
    out = str(tmp_path / "gen")
    first = incremental.update(out, FunctionsRequest(nf, dv, None, OPTS, unity=0))
    assert "FwdBackward0" in first.regenerated
    with open(f"{out}/functions/FwdBackward0.cpp") as f:
        assert "ext_fwd_backward.h" not in f.read()
    with open(nf, "w") as f:
        f.write(without + "- func: ext::fwd_backward(Tensor grad_output, SymInt n) -> Tensor\n")
    second = incremental.update(out, FunctionsRequest(nf, dv, None, OPTS, unity=0))
    assert sorted(second.regenerated) == ["FwdBackward0", "ext::fwd_backward"]
    with open(f"{out}/functions/FwdBackward0.cpp") as f:
        assert '#include "../ops/ext_fwd_backward.h"' in f.read()
