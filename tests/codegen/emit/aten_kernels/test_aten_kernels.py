"""The Autograd kernels of ATen ops a patch replaces libtorch's with
(codegen/emit/aten_kernels/aten_kernel.py, aten_kernels/aten_forward_ad.py; engine/patch_kernels.py),
rendered from small specs in ATen's shape: what each kind of op's kernel
does, in torch's VariableType's order.  Their behaviour in the installed
torch is the compile tier's (tests/torch_patch/test_patch_kernels.py and
the OpInfo differential)."""

import pytest

from autograd_scons.codegen.engine.units import load_model
from autograd_scons.codegen.engine.patch_kernels import (FOREACH, MANUAL, NO_ENTRY, OUT_VARIANT, aten_ops,
                                                          kernel_unit, not_generated)

NATIVE = "".join(f"- func: {schema}\n  dispatch:\n    CPU: kernel_{i}\n" for i, schema in enumerate((
    "sin(Tensor self) -> Tensor", "mul.Tensor(Tensor self, Tensor other) -> Tensor",
    "mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
    "mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    "diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
    "erfinv(Tensor self) -> Tensor", "erfinv_(Tensor(a!) self) -> Tensor(a!)",
    "kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "detach(Tensor(a) self) -> Tensor(a)", "_foreach_sin(Tensor[] self) -> Tensor[]",
    "cat(Tensor[] tensors, int dim=0) -> Tensor", "heaviside(Tensor self, Tensor values) -> Tensor",
    "unbind_copy.int(Tensor self, int dim=0) -> Tensor[]")))
DERIVATIVES = """
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos().conj()
  result: auto_element_wise

- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
  result: other_t * self_p + self_t * other_p

- name: diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)
  self: diagonal_backward_symint(grad, self.sym_sizes(), offset, dim1, dim2)
  result: auto_linear

- name: erfinv(Tensor self) -> Tensor
  self: 0.5 * sqrt(M_PI) * exp(self.erfinv().pow(2)) * grad

- name: kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), keepdim)
  values: gather_with_keepdimed_indices(self_t, dim, indices, keepdim)

- name: detach(Tensor(a) self) -> Tensor(a)
  self: grad

- name: unbind_copy.int(Tensor self, int dim=0) -> Tensor[]
  self: unbind_backward(grads, dim)
  result: auto_linear

- name: cat(Tensor[] tensors, int dim=0) -> Tensor
  tensors: cat_tensors_backward(grad, to_args_sizes_symint(tensors), to_args_scalartypes(tensors), dim)
  result: cat_jvp(tensors, dim)
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("aten")
    nf, d = tmp / "native_functions.yaml", tmp / "derivatives.yaml"
    nf.write_text(NATIVE)
    d.write_text(DERIVATIVES)
    out, why = {}, {}
    loaded = load_model(str(nf), str(d), None, kernels=False)
    for f, info, exact in aten_ops(loaded.native, loaded.infos):
        name = str(f.func.name)
        why[name] = not_generated(f, info)
        if why[name] is None:
            u = kernel_unit(f, info, exact, False, frozenset({"sin", "mul", "cat"}))
            out[name] = next(iter(u.render(None).values()))
    return out, why


def _in_order(text: str, *lines: str) -> None:
    at = 0
    for line in lines:
        found = text.find(line, at)
        assert found >= 0, f"{line!r} not after position {at} in:\n{text}"
        at = found + len(line)


def test_ops_keep_libtorchs_kernel_for_a_reason(kernels):
    _, why = kernels
    assert why == {"sin": None, "mul.Tensor": None, "mul_.Tensor": None, "mul.out": OUT_VARIANT, "diagonal": None,
                   "erfinv": None, "erfinv_": None, "kthvalue": None, "detach": MANUAL, "_foreach_sin": FOREACH,
                   "cat": None, "heaviside": NO_ENTRY, "unbind_copy.int": None}


def test_a_functional_op_saves_calls_below_autograd_and_sets_history(kernels):
    text = kernels[0]["sin"]
    _in_order(text, 'auto& self_ = unpack(self, "self", 0);',
              "auto _any_requires_grad = compute_requires_grad( self );",
              "auto _any_has_forward_grad_result = (isFwGradDefined(self));",
              "grad_fn = c10::make_intrusive<torch::autograd::generated::SinBackward0>();",
              "grad_fn->set_next_edges(collect_next_edges( self ));",
              "grad_fn->self_ = SavedVariable(self, false);",
              "at::AutoDispatchBelowADInplaceOrView guard;",
              "return op.redispatch(ks & c10::after_autograd_keyset, self_);",
              "auto result = std::move(_tmp);",
              "set_history(flatten_tensor_args( result ), grad_fn);",
              "result_new_fw_grad_opt = (self_t.conj() * self_p.cos().conj()).conj();",
              "result._set_fw_grad(result_new_fw_grad_opt.value(), /* level */ 0, /* is_inplace_op */ false);",
              "return result;")
    assert "throw_error_for_complex_autograd" not in text   # (sin is differentiated for complex outputs)
    _in_order(text, 'autograd_lib.impl("sin", torch::dispatch(c10::DispatchKey::Autograd, '
                    'TORCH_FN(aten_sin_autograd)));', '::autograd_functions_load::claim_kernel("aten::sin");')


def test_two_inputs_save_each_only_for_the_other_ones_formula(kernels):
    text = kernels[0]["mul.Tensor"]
    _in_order(text, "if (grad_fn->should_compute_output(0)) {", "grad_fn->other_ = SavedVariable(other, false);",
              "if (grad_fn->should_compute_output(1)) {", "grad_fn->self_ = SavedVariable(self, false);")
    assert "update_wrapped_number(other_tensor, other_t);" in text


def test_an_inplace_op_checks_clones_what_it_overwrites_and_rebases_history(kernels):
    text = kernels[0]["mul_.Tensor"]
    _in_order(text, "check_inplace(self, _any_requires_grad);", "::std::optional<at::Tensor> original_self;",
              "if (_any_has_forward_grad_self) {", "original_self = self.clone();",
              "if (!original_self.has_value()) original_self = self.clone();",
              "grad_fn->self_ = SavedVariable(original_self.value(), false);",
              "at::AutoDispatchBelowAutograd guard;", "op.redispatch(ks & c10::after_autograd_keyset, self_, other_);",
              "rebase_history(flatten_tensor_args( self ), grad_fn);",
              "at::zeros_symint(self_tensor.sym_sizes(), self_tensor.options());",
              "self_t_raw.defined() ? self_t_raw.copy_(other_t * original_self_p + original_self_t * other_p)",
              "/* is_inplace_op */ true);", "return self;")


def test_a_view_runs_libtorchs_ad_inplace_or_view_kernel(kernels):
    text = kernels[0]["diagonal"]
    _in_order(text, "at::AutoDispatchBelowAutograd guard;", "set_history(flatten_tensor_args( result ), grad_fn);")
    assert "throw_error_for_complex_autograd(result, \"diagonal\");" in text


def test_no_forward_formula_decomposes_or_refuses_as_libtorch(kernels):
    functional, inplace = kernels[0]["erfinv"], kernels[0]["erfinv_"]
    _in_order(functional, "if ((isFwGradDefined(self))) {",
              'return impl::run_jit_decomposition_with_args_for_jvp<at::Tensor>("erfinv", op, ks, self);')
    _in_order(inplace, 'TORCH_CHECK_NOT_IMPLEMENTED(!(isFwGradDefined(self)), "Trying to use forward AD with '
                       'erfinv_ that does not support it because it has not been implemented yet.')


def test_several_outputs_only_the_differentiable_ones_get_history(kernels):
    text = kernels[0]["kthvalue"]
    _in_order(text, "auto [values, indices] = std::move(_tmp);",
              "set_history(flatten_tensor_args( values ), grad_fn);",
              "grad_fn->indices_ = SavedVariable(indices, true);",
              "return std::make_tuple(std::move(values), std::move(indices));")


def test_a_list_input_saves_its_size_and_runs_its_forward_formula_always(kernels):
    text = kernels[0]["cat"]
    _in_order(text, 'auto tensors_ = unpack(tensors, "tensors", 0);',
              "auto _any_has_forward_grad_result = true;", "grad_fn->tensors_size_ = tensors.size();")


def test_only_a_tensor_output_is_refused_complex_as_torchs_kernels_do(kernels):
    # (unbind_copy is not in the list of ops torch differentiates for complex, but its kernel, like
    # split_with_sizes_copy's, checks only Tensor outputs: a list output passes; the OpInfo
    # differential found this)
    text = kernels[0]["unbind_copy.int"]
    assert "set_history(flatten_tensor_args( result ), grad_fn);" in text
    assert "throw_error_for_complex_autograd" not in text
    assert 'throw_error_for_complex_autograd(result, "diagonal");' in kernels[0]["diagonal"]
