"""Extension ops that return views (emit/op_kernels/views.py), as generated text: the
kernels and registrations each view op gets, its `_copy` twin, and one
located error for each declaration the generator refuses.  What the
kernels do at run time is the differential suite's and the example's
(tests/codegen/emit/op_kernels/test_aten_differential.py, tests/example/test_views_pt2.py)."""

import re

import pytest

from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.engine.units import load_units
from autograd_scons.base.errors import SpecError

OPTS = EmitOptions(namespace="ext::autograd")
BAND = ("- func: ext::band(Tensor(a) self, int k=0) -> Tensor(a)\n"
        "  dispatch:\n    CompositeExplicitAutograd: band\n"
        "  view:\n    inverse: band_scatter\n")
BAND_D = ("- name: band(Tensor(a) self, int k=0) -> Tensor(a)\n"
          "  self: at::diagonal_backward_symint(grad, self.sym_sizes(), k, 0, 1)\n  result: auto_linear\n")
ROWS = ("- func: ext::rows(Tensor(a -> *) self) -> Tensor(a)[]\n"
        "  dispatch:\n    CPU: rows_cpu\n"
        "  view:\n    inverse: rows_scatter\n")
ROWS_D = "- name: rows(Tensor(a -> *) self) -> Tensor(a)[]\n  self: ext::rows_backward(grads, self)\n  result: auto_linear\n"
SWAP = ("- func: ext::swap(Tensor(a) self, int[] dims) -> Tensor(a)\n"
        "  dispatch:\n    CompositeExplicitAutograd: swap\n"
        "  view:\n    inverse: swap_back\n    whole_input: true\n")
# (derivatives.yaml may not be empty while a native function needs an entry)
OTHER = "- name: other(Tensor self) -> Tensor\n  self: grad\n"
SWAP_D = "- name: swap(Tensor(a) self, int[] dims) -> Tensor(a)\n  self: grad.permute(dims)\n  result: auto_linear\n"


def render(tmp_path, native, derivatives, kernels=True):
    if "name: other(" in derivatives:
        native += "- func: ext::other(Tensor self) -> Tensor\n  dispatch:\n    CPU: other\n"
    nf, dv = tmp_path / "native_functions.yaml", tmp_path / "derivatives.yaml"
    nf.write_text(native)
    dv.write_text(derivatives)
    files = {}
    opts = OPTS if kernels else EmitOptions(namespace="ext::autograd", kernels=False)
    for unit in load_units(str(nf), str(dv), kernels=kernels):
        files.update(unit.render(opts))
    return files


def registered(cpp):
    return sorted(re.findall(r'(\w+)_lib\.impl\("([\w.]+)", TORCH_FN\(([\w:]+)\)\);', cpp))


def test_a_view_op_gets_adinplaceorview_functionalize_and_autograd_below_autograd_only(tmp_path):
    files = render(tmp_path, BAND, BAND_D)
    cpp = files["ops/ext_band.cpp"]
    assert registered(cpp) == [("ADInplaceOrView", "band", "ext_band_ad_inplace_or_view"),
                               ("Autograd", "band", "ext_band_autograd"),
                               ("CompositeExplicitAutograd", "band", "::ext::native::band"),
                               ("Functionalize", "band", "ext_band_functionalize")]
    autograd = cpp[cpp.index("ext_band_autograd("):cpp.index("return _result;")]
    # the redispatch reaches the op's ADInplaceOrView kernel
    assert "at::AutoDispatchBelowAutograd guard;" in autograd and "BelowADInplaceOrView" not in autograd
    assert "CreationMeta::DEFAULT" in cpp and "MULTI_OUTPUT_NODE" not in cpp
    assert "struct ext_band_ViewFunc" in cpp and "int64_t k_;" in cpp
    assert "_tmp.is_alias_of(self)" in cpp  # a kernel returning a copy is refused
    assert "mutated_view.as_strided_symint(base.sym_sizes()" in cpp  # a view of part of its input
    assert "return ::ext::native::band_scatter(base, mutated_view, k_);" in cpp
    assert ("at::Tensor band_scatter(const at::Tensor & base, const at::Tensor & mutated_view, int64_t k);"
            in files["ops/ext_band.h"])
    assert {"functions/BandBackward0.h", "functions/BandBackward0_copy.h"} <= set(files)


def test_the_copy_twin_is_the_view_cloned_with_the_views_formula(tmp_path):
    files = render(tmp_path, BAND, BAND_D)
    cpp = files["ops/ext_band_copy.cpp"]
    assert 'def_lib.def("band_copy(Tensor self, int k=0) -> Tensor");' in cpp
    assert registered(cpp) == [("Autograd", "band_copy", "ext_band_copy_autograd"),
                               ("CompositeExplicitAutograd", "band_copy", "ext_band_copy_composite")]
    assert 'findSchemaOrThrow("ext::band", "")' in cpp
    assert "return _view_op.call(self, k).clone(at::MemoryFormat::Contiguous);" in cpp
    assert "c10::make_intrusive<BandBackward0_copy>()" in cpp and "AutoDispatchBelowADInplaceOrView" in cpp
    assert "ext_band_copy.h" not in files  # nothing hand-written
    assert "at::diagonal_backward_symint(grad, self_sym_sizes, k, 0, 1)" in files["functions/BandBackward0_copy.cpp"]


def test_a_list_of_views_is_made_of_multi_output_views_with_one_tangent_each(tmp_path):
    cpp = render(tmp_path, ROWS, ROWS_D)["ops/ext_rows.cpp"]
    assert "CreationMeta::MULTI_OUTPUT_NODE" in cpp
    assert "std::vector<at::Tensor> result_new_fw_grad = op.call(self_t);" in cpp
    assert "result[_i]._set_fw_grad(result_new_fw_grad[_i]" in cpp
    assert "to_out_index(int64_t out_idx) override" in cpp and "/*is_multi_output=*/true" in cpp
    assert "return ::ext::native::rows_scatter(base, mutated_view, view_idx);" in cpp


def test_a_view_of_its_whole_input_uses_its_inverse_view_for_autograd_and_a_copy_of_it_for_functionalization(
        tmp_path):
    cpp = render(tmp_path, SWAP, SWAP_D)["ops/ext_swap.cpp"]
    assert "as_strided_symint" not in cpp
    assert "at::Tensor _inverse = ::ext::native::swap_back(base, mutated_view, dims_);" in cpp
    assert "_inverse : _inverse.clone(at::MemoryFormat::Contiguous)" in cpp
    assert "::std::vector<int64_t> dims_;" in cpp and "dims = dims.vec()" in cpp  # held past the call


def test_ops_without_views_get_none_of_it(tmp_path):
    native = "- func: ext::twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: twice_cpu\n"
    cpp = render(tmp_path, native, "- name: twice(Tensor self) -> Tensor\n  self: grad * 2\n")["ops/ext_twice.cpp"]
    assert "ADInplaceOrView" not in cpp.replace("AutoDispatchBelowADInplaceOrView", "")
    assert "Functionalize" not in cpp and "Registration and Autograd kernel of" in cpp


def test_without_kernels_a_view_needs_no_declaration(tmp_path):
    files = render(tmp_path, BAND.split("  view:")[0], BAND_D, kernels=False)
    assert sorted(f for f in files if f.startswith("functions/") and f.endswith(".h")) == \
        ["functions/BandBackward0.h", "functions/BandBackward0_copy.h"]


def test_a_decomposing_view_is_only_registered(tmp_path):
    native = "- func: ext::alias(Tensor(a) self) -> Tensor(a)\n  dispatch:\n    CompositeImplicitAutograd: alias\n"
    files = render(tmp_path, native, "")
    assert sorted(files) == ["ops/ext_alias.cpp", "ops/ext_alias.h"]  # no copy, no view kernels


# (native, derivatives, line, message): each refusal, at its line.
BAD = [
    (BAND.split("  view:")[0], BAND_D, 1, "a view op needs 'view: {inverse: NAME}'"),
    (ROWS.replace("Tensor(a -> *) self", "Tensor(a) self"), ROWS_D.replace("Tensor(a -> *)", "Tensor(a)"), 1,
     "declare a list of views as ATen's unbind does, 'Tensor(a -> *) self -> Tensor(a)[]' (with 'Tensor(a) "
     "self', opcheck's test_schema fails"),
    (BAND.replace("Tensor(a) self", "Tensor(a -> *) self"), BAND_D.replace("Tensor(a)", "Tensor(a -> *)", 1), 1,
     "a single view is declared 'Tensor(a) self'"),
    ("- func: ext::twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: t\n  view:\n    inverse: x\n",
     "- name: twice(Tensor self) -> Tensor\n  self: grad\n", 4, "'view:' is for an op whose output is a view"),
    (BAND.replace("    inverse: band_scatter\n", "    inverse: band_scatter\n    whole: true\n"), BAND_D, 4,
     "'view' must be a mapping with 'inverse: NAME'"),
    (BAND.replace("inverse: band_scatter", "inverse: 2band"), BAND_D, 4, "'inverse' must name a function in "
     "ext::native (a C++ identifier), not '2band'"),
    (ROWS + "    whole_input: true\n", ROWS_D, 4, "'whole_input' must be true or false, and false for a list"),
    (BAND.replace("int k=0", "SymInt k"), BAND_D.replace("int k=0", "SymInt k"), 1,
     "argument 'k' of a view op is a 'SymInt': a view op's other arguments are held past the call"),
    (BAND.replace("int k=0", "Tensor other"), BAND_D.replace("int k=0", "Tensor other").replace(", k, 0", ", 0, 0"),
     1, "argument 'other' of a view op is a 'Tensor'"),
    (BAND.replace("Tensor(a) self, int k=0", "Tensor other, Tensor(a) self"),
     BAND_D.replace("Tensor(a) self, int k=0", "Tensor other, Tensor(a) self").replace(", k, 0", ", 0, 0"), 1,
     "a view op's output aliases its first argument"),
    (BAND.replace("-> Tensor(a)", "-> (Tensor(a), Tensor(a))"), OTHER, 1, "a view op returns one view"),
    (BAND.replace("  dispatch:\n    CompositeExplicitAutograd: band\n", ""), BAND_D, 1,
     "a view op needs 'dispatch:' naming its kernel"),
    (BAND.replace("CompositeExplicitAutograd", "CompositeImplicitAutograd"), "", 4,
     "a CompositeImplicitAutograd op's views are those of the ops its kernel calls: nothing to generate, drop"),
    (BAND, OTHER, 1, "a view op needs a derivatives entry"),
    (BAND, BAND_D.replace("result: auto_linear", "result: self_t.diagonal(k)"), 3,
     "the forward formula of a view must be 'auto_linear'"),
    (BAND + "- func: ext::band_copy(Tensor self, int k=0) -> Tensor\n", BAND_D, 6,
     "'ext::band_copy' is generated as the copy of the view 'ext::band(Tensor(a) self, int k=0) -> Tensor(a)' "
     "(line 1): remove this entry, or rename one of them"),
    (BAND.replace("ext::band(", "ext::my_copy_band("), BAND_D.replace("band(", "my_copy_band("), 1,
     "a view's name cannot contain '_copy'"),
]


@pytest.mark.parametrize("native,derivatives,line,message", BAD, ids=[str(i) for i in range(len(BAD))])
def test_each_refusal_is_one_located_line(tmp_path, native, derivatives, line, message):
    with pytest.raises(SpecError) as e:
        render(tmp_path, native, derivatives)
    text = str(e.value)
    assert "\n" not in text
    where = "derivatives.yaml" if "forward formula" in message else "native_functions.yaml"
    assert text.startswith(f"{tmp_path / where}:{line}: entry '"), text
    assert message in text, text
