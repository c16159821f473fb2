"""The checks ATen's generated Autograd kernels make, made by ours, as text
(tests/codegen/emit/op_kernels/test_aten_differential.py runs them against ATen's):
check_no_requires_grad for an input without a formula, torch's autograd
fallback for an op without any entry, out= refusing, `_out` op names, a
formula for an argument that cannot have a gradient."""

import re

import pytest

from autograd_scons.__main__ import main
from autograd_scons.codegen.emit.op_kernels.kernels import render_kernel
from autograd_scons.codegen.parse.extension_ops import kernel_units
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.parse.load_derivatives import infos_from_specs, load_specs

OPTS = EmitOptions(namespace="nbx::autograd")


def units_of(tmp_path, native, derivatives=""):
    (tmp_path / "nf.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(derivatives)
    specs = load_specs(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml"))
    return {u.op: u for u in kernel_units(specs.native, infos_from_specs(specs))}


def cpp(unit):
    return render_kernel(unit, OPTS)[f"ops/{unit.stem}.cpp"]


def test_input_without_formula_is_checked_as_aten_does(tmp_path):
    units = units_of(tmp_path, "- func: nbx::mm2(Tensor a, Tensor b) -> Tensor\n"
                               "- func: nbx::scl(Tensor self, Tensor b) -> Tensor\n"
                               "- func: nbx::scl_(Tensor(a!) self, Tensor b) -> Tensor(a!)\n"
                               "- func: nbx::pick(Tensor a, Tensor mask, Tensor? w, Tensor[] xs) -> Tensor\n",
                     "- name: mm2(Tensor a, Tensor b) -> Tensor\n  a: grad * b\n"
                     "- name: scl(Tensor self, Tensor b) -> Tensor\n  self: grad * b\n"
                     "- name: pick(Tensor a, Tensor mask, Tensor? w, Tensor[] xs) -> Tensor\n"
                     "  a: grad\n  mask: non_differentiable\n")
    assert 'check_no_requires_grad(b, "b", "mm2");' in cpp(units["nbx::mm2"])
    assert 'check_no_requires_grad(a, "a"' not in cpp(units["nbx::mm2"])
    assert 'check_no_requires_grad(b, "b", "scl_");' in cpp(units["nbx::scl_"])   # ATen: the in-place name
    pick = cpp(units["nbx::pick"])
    assert re.findall(r'check_no_requires_grad\((\w+),', pick) == ["w", "xs"]   # not the non_differentiable mask


MYADD = ("- func: nbx::myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()\n"
         "  dispatch:\n    CPU: myadd_out_cpu\n"
         "- func: nbx::myadd(Tensor a, Tensor b) -> Tensor\n"
         "- func: nbx::myadd.out(Tensor a, Tensor b, *, Tensor(a!) out) -> Tensor(a!)\n"
         "- func: nbx::neg2(Tensor self) -> Tensor\n")
NEG2 = "- name: neg2(Tensor self) -> Tensor\n  self: -grad\n"   # a file with no entry is refused


def test_op_named_like_an_out_overload_is_accepted_with_names_of_its_own(tmp_path):
    units = units_of(tmp_path, MYADD, NEG2)
    assert units["nbx::myadd_out"].stem == "nbx_myadd_out"
    assert units["nbx::myadd.out"].stem == "nbx_myadd__out"     # moved aside: no shared C++ or file name
    own = cpp(units["nbx::myadd_out"])
    assert "register_nbx_myadd_out()" in own and "register_nbx_myadd__out()" in cpp(units["nbx::myadd.out"])


def test_names_that_still_collide_say_what_to_rename(tmp_path, capsys):
    (tmp_path / "nf.yaml").write_text(MYADD + "- func: nbx::myadd__out(Tensor a) -> Tensor\n")
    (tmp_path / "d.yaml").write_text(NEG2)
    rc = main(["generate", "--native-functions", str(tmp_path / "nf.yaml"), "--derivatives",
               str(tmp_path / "d.yaml"), "--out", str(tmp_path / "gen")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1, err
    assert "nf.yaml:" in err[0] and "rename one of them" in err[0], err


def test_op_without_entry_gets_torchs_autograd_fallback(tmp_path):
    """No derivatives entry: no Autograd kernel at all, so that torch's own
    fallback for an op without one applies (a mutating `-> ()` op runs with
    inputs that require grad; backward through a result warns), exactly as
    for the same op registered through torch.library."""
    units = units_of(tmp_path, MYADD, NEG2)
    own = cpp(units["nbx::myadd_out"])
    assert "DispatchKey::Autograd" not in own and "_autograd(" not in own
    assert "DispatchKey::CPU" in own and 'def_lib.def("myadd_out(' in own
    plain = cpp(units["nbx::myadd"])             # no dispatch: the schema alone
    assert "DispatchKey::" not in plain and 'def_lib.def("myadd(' in plain


def test_out_overload_without_entry_keeps_atens_refusal(tmp_path):
    out = cpp(units_of(tmp_path, MYADD, NEG2)["nbx::myadd.out"])
    assert "DispatchKey::Autograd" in out
    assert "functions with out=... arguments don't support automatic differentiation" in out


@pytest.mark.parametrize("arg", ["scale", "n", "flag"])
def test_formula_for_an_argument_without_gradient_is_one_located_error(tmp_path, capsys, arg):
    (tmp_path / "nf.yaml").write_text("- func: nbx::sc(Tensor self, float scale, int n, bool flag) -> Tensor\n")
    (tmp_path / "d.yaml").write_text("- name: sc(Tensor self, float scale, int n, bool flag) -> Tensor\n"
                                     "  self: grad * scale\n"
                                     f"  {arg}: (grad * self).sum()\n")
    rc = main(["infos", "--native-functions", str(tmp_path / "nf.yaml"), "--derivatives", str(tmp_path / "d.yaml")])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 1 and out == "" and len(lines) == 1, err
    assert f"{tmp_path / 'd.yaml'}:3: entry 'sc(" in lines[0] and f"argument '{arg}'" in lines[0], err
    assert "cannot have a gradient" in lines[0], err


def test_report_and_explain_name_the_inputs_checked_at_run_time(tmp_path, capsys):
    from autograd_scons.codegen.engine import incremental
    from autograd_scons.codegen.engine.functions_request import FunctionsRequest
    from autograd_scons.codegen.engine.update_summary import explain, report
    (tmp_path / "nf.yaml").write_text("- func: nbx::mm2(Tensor a, Tensor b) -> Tensor\n")
    (tmp_path / "d.yaml").write_text("- name: mm2(Tensor a, Tensor b) -> Tensor\n  a: grad * b\n")
    r = incremental.update(str(tmp_path / "gen"),
                           FunctionsRequest(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml"), None, OPTS))
    assert "inputs with no formula, refused at run time if they require grad: nbx::mm2 (b)" in report(r)
    assert "inputs with no formula (b): legal, refused at run time if they require grad" in explain(r, "nbx::mm2")
    assert "no formula" not in explain(r, "Mm2Backward0")


def test_kernel_no_object_defines_is_one_located_line(tmp_path):
    from autograd_scons.tool.kernel_check import missing_kernels
    from autograd_scons.codegen.model.extension_op import declared_kernels
    native = ("- func: extension_cpp::mul2(Tensor a) -> Tensor\n"
              "  dispatch:\n    CPU: mul2_cpu\n"
              "- func: extension_cpp::neg2(Tensor self) -> Tensor\n")
    units = units_of(tmp_path, native, "- name: neg2(Tensor self) -> Tensor\n  self: -grad\n")
    nm = ["                 U at::_ops::mul_Tensor::call(at::Tensor const&, at::Tensor const&)",
          "                 U extension_cpp::native::mul2_cpu(at::Tensor const&)"]
    (line,) = missing_kernels(declared_kernels(list(units.values())), nm)
    assert line.startswith(f"{tmp_path / 'nf.yaml'}:3: entry 'extension_cpp::mul2': the CPU kernel 'mul2_cpu' "
                           "is declared here but no object defines it"), line
    assert "`at::Tensor extension_cpp::native::mul2_cpu(const at::Tensor & a)`" in line or \
        "extension_cpp::native::mul2_cpu(const at::Tensor &" in line, line
    assert "(in namespace extension_cpp::native)" in line
    assert missing_kernels(declared_kernels(list(units.values())), nm[:1]) == []


def test_kernel_defined_in_another_namespace_is_one_located_line(tmp_path):
    """Before the link: the hand-written objects' defined functions (nm -C
    --defined-only) hold the kernel's name, with its parameter count, outside
    `<ns>::native`; a helper of that name with other parameters is not it,
    and nothing is said once `<ns>::native` defines it."""
    from autograd_scons.tool.kernel_check import misplaced_kernels
    from autograd_scons.codegen.model.extension_op import declared_kernels
    native = "- func: nbw::mm2(Tensor a, Tensor b) -> Tensor\n  dispatch:\n    CPU: mm2\n"
    derivatives = "- name: mm2(Tensor a, Tensor b) -> Tensor\n  a: grad.mm(b.t())\n"
    declared = declared_kernels(list(units_of(tmp_path, native, derivatives).values()))
    wrong = {"k.os": ["0000000000000000 T nbw::mm2(at::Tensor const&, at::Tensor const&)",
                      "0000000000000040 T nbw::detail::mm2(at::Tensor const&)"]}
    (line,) = misplaced_kernels(declared, wrong)
    assert line == (f"{tmp_path / 'nf.yaml'}:3: entry 'nbw::mm2': the CPU kernel 'mm2' is defined in namespace nbw "
                    "(k.os), not in nbw::native, where the op's generated header declares it: define `at::Tensor "
                    "nbw::native::mm2(const at::Tensor &, const at::Tensor &)` inside `namespace nbw::native { }`")
    assert misplaced_kernels(declared, {"k.os": wrong["k.os"][1:]}) == []   # another arity: a helper
    right = {"k.os": wrong["k.os"] + ["0000000000000080 T nbw::native::mm2(at::Tensor const&, at::Tensor const&)"]}
    assert misplaced_kernels(declared, right) == []
