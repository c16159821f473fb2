"""`autocast:` and `vmap:` of an extension op, and the keys an entry of
native_functions.yaml may have (parse/transform_keys.py, parse/entry_keys.py):
each bad declaration refused at its line, naming the entry; what a good one
generates (emit/op_kernels/autocast.py, emit/op_kernels/vmap.py): ATen's wrapper per device type,
the plumbing and its rule, registered; a hand-written rule declared, printed
by `signatures` and looked for by the kernel check.  The generated kernels
at work, against ATen's: tests/codegen/emit/op_kernels/test_aten_differential.py."""

import re

import pytest

from autograd_scons.__main__ import main
from autograd_scons.tool.kernel_check import missing_kernels
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.engine.native_records import decode, encode
from autograd_scons.codegen.engine.units import load_units
from autograd_scons.codegen.model.extension_op import declared_kernels
from autograd_scons.codegen.parse.native_functions import parse_native_functions

OPTS = EmitOptions(namespace="ext::autograd")
MM = "- func: ext::mm(Tensor self, Tensor mat2) -> Tensor\n  dispatch:\n    CPU: mm_cpu\n"
DERIVATIVES = "- name: mm(Tensor self, Tensor mat2) -> Tensor\n  self: grad.mm(mat2.t())\n  mat2: self.t().mm(grad)\n"


def generate(tmp_path, capsys, native, derivatives=DERIVATIVES):
    """(exit status, stderr) of `python -m autograd_scons generate`."""
    (tmp_path / "nf.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(derivatives)
    rc = main(["generate", "-q", "--native-functions", str(tmp_path / "nf.yaml"), "--derivatives",
               str(tmp_path / "d.yaml"), "--out", str(tmp_path / "gen"), "--namespace", "ext::autograd"])
    return rc, capsys.readouterr().err


def render(tmp_path, native, derivatives=DERIVATIVES):
    (tmp_path / "nf.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(derivatives)
    files = {}
    for unit in load_units(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml")):
        files.update(unit.render(OPTS))
    return files


def registered(cpp):
    return re.findall(r'(\w+)_lib\.impl\("([\w.]+)", TORCH_FN\(([\w:]+)\)\);', cpp)


# ---------------------------------------------------------------- unknown keys

@pytest.mark.parametrize("native, line, words", [
    # a misspelt key of an extension op: today's main built it without a word
    (MM + "  autocats: fp32\n", 4, ["unknown key 'autocats' in an entry of an extension op",
                                    "(allowed: func, dispatch, view, autocast, vmap, fake, variants, "
                                    "use_const_ref_for_mutable_tensors)"]),
    (MM + "  frobnicate: 1\n", 4, ["unknown key 'frobnicate'"]),
    # an ATen op's keys are torchgen's
    ("- func: mm(Tensor self, Tensor mat2) -> Tensor\n  variants: function, method\n  frobnicate: 1\n", 3,
     ["unknown key 'frobnicate' in an entry of an ATen op (allowed: func, variants, dispatch, tags"]),
    ("- func: mm(Tensor self, Tensor mat2) -> Tensor\n  vmap: pointwise\n", 2,
     ["unknown key 'vmap' in an entry of an ATen op", "'vmap' is for an extension's own op"]),
])
def test_an_unknown_key_fails_at_its_line(tmp_path, capsys, native, line, words):
    rc, err = generate(tmp_path, capsys, native)
    assert rc == 1 and err.count("\n") == 1, err
    assert err.startswith(f"error: {tmp_path / 'nf.yaml'}:{line}: entry '"), err
    assert all(w in err for w in words), err
    assert not (tmp_path / "gen").exists()   # nothing written


@pytest.mark.parametrize("key, value, why", [
    ("tags", "pt2_compliant_tag", "tags are not registered with an extension op's schema"),
    ("autogen", "ext::mm.out", "the tool derives no variants of an extension op"),
    ("structured", "True", "ATen's structured kernels"),
    ("structured_delegate", "ext::mm.out", "ATen's structured kernels"),
    ("device_guard", "False", "with no device guard or device check"),
    ("device_check", "NoCheck", "with no device guard or device check"),
    ("python_module", "nn", "torch.ops.<ns>.<op>"),
    ("manual_kernel_registration", "True", "an op without 'dispatch:'"),
    ("manual_cpp_binding", "True", "the op's C++ caller"),
    ("cpp_no_default_args", "['mat2']", "ATen's own C++ and Python bindings"),
    ("variants", "function, method", "an extension op has no Tensor method"),
])
def test_an_aten_key_without_meaning_for_an_extension_op_is_refused_not_ignored(tmp_path, capsys, key, value, why):
    rc, err = generate(tmp_path, capsys, MM + f"  {key}: {value}\n")
    assert rc == 1 and err.startswith(f"error: {tmp_path / 'nf.yaml'}:4: entry 'ext::mm(Tensor self"), err
    assert why in err, err


def test_the_keys_an_extension_op_may_have_pass(tmp_path, capsys):
    rc, err = generate(tmp_path, capsys, MM + "  variants: function\n  use_const_ref_for_mutable_tensors: False\n"
                       "  autocast: fp32\n  vmap: pointwise\n")
    assert (rc, err) == (0, "")


# ---------------------------------------------------------------- bad declarations

SET_OPT = ("- func: ext::total(Tensor self, *, ScalarType? dtype=None) -> Tensor\n  dispatch:\n    CPU: total\n")
NORM = ("- func: ext::norm.Scalar(Tensor self, Scalar p=2) -> Tensor\n  dispatch:\n    CPU: norm_cpu\n"
        "  autocast: fp32_append_dtype\n")
NORM_DTYPE = "- func: ext::norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype) -> Tensor\n"


@pytest.mark.parametrize("native, line, words", [
    (MM + "  autocast: lower_precision\n", 4, "unknown autocast policy 'lower_precision' (ATen's: lower_precision_fp"),
    (MM + "  autocast:\n    CPU: fp32\n    XLA: fp32\n", 6, "unknown device type 'XLA' under 'autocast'"),
    (MM + "  autocast:\n    CPU: fp16\n", 5, "unknown autocast policy 'fp16'"),
    (MM + "  autocast: [fp32]\n", 4, "'autocast' must be a policy"),
    ("- func: ext::scale_(Tensor(a!) self, Tensor other) -> ()\n  autocast: fp32\n", 2,
     "an op that writes an argument ('self') cannot have an autocast policy"),
    ("- func: ext::band(Tensor(a) self) -> Tensor(a)\n  autocast: fp32\n", 2, "a view op cannot have an autocast"),
    ("- func: ext::ones(int n) -> Tensor\n  autocast: fp32\n", 2, "casts tensor arguments, and this op has none"),
    (MM.replace("ext::mm", "ext::mm.dt") + "  autocast: fp32_set_opt_dtype\n", 4,
     "fp32_set_opt_dtype sets the op's one 'ScalarType?' argument"),
    ("- func: ext::s(int n, Tensor self, ScalarType? dtype=None) -> Tensor\n  autocast: {CUDA: fp32_set_opt_dtype}\n",
     2, "fp32_set_opt_dtype decides by the first argument, which must be a Tensor"),
    (NORM, 4, "fp32_append_dtype redispatches to the overload of 'ext::norm' that takes this op's arguments and a "
              "trailing 'ScalarType'"),
    (NORM + NORM_DTYPE + NORM_DTYPE.replace("ScalarOpt_dtype", "dtype2"), 4, "several: 'norm.ScalarOpt_dtype'"),
    ("- func: ext::f(Tensor self, Tensor op) -> Tensor\n  autocast: fp32\n", 2,
     "argument 'op' is also the name of a variable of the generated Autocast kernel"),
    (MM + "  vmap: elementwise\n", 4, "'vmap' must be a kind of batch rule (pointwise, leading_dims) or "
                                      "'{rule: NAME}'"),
    (MM + "  vmap: {rule: 2x}\n", 4, "'rule' must name a batch rule in ext::native (a C++ identifier)"),
    (MM + "  vmap: {rule: mm_rule, kind: pointwise}\n", 4, "'vmap' must be a kind"),
    ("- func: ext::mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n  vmap: pointwise\n", 2,
     "vmap does not batch an out= op"),
    ("- func: ext::total(Tensor[] xs) -> Tensor\n  vmap: leading_dims\n", 2,
     "the vmap plumbing unwraps Tensor and Tensor? arguments, not 'xs'"),
    ("- func: ext::count(Tensor self) -> int\n  vmap: {rule: count_rule}\n", 2,
     "the vmap plumbing wraps tensor results (Tensor, Tensor[]), not 'int'"),
    ("- func: ext::ones(int n) -> Tensor\n  vmap: pointwise\n", 2, "vmap batches tensor arguments, and this op has none"),
    ("- func: ext::f(Tensor self, Tensor rank) -> Tensor\n  vmap: pointwise\n", 2,
     "argument 'rank' is also the name of a variable of the generated vmap plumbing"),
    ("- func: ext::f(Tensor self, int self_bdim) -> Tensor\n  vmap: pointwise\n", 2,
     "argument 'self_bdim' is also the name of a variable"),
])
def test_a_bad_declaration_is_refused_at_its_line(tmp_path, capsys, native, line, words):
    rc, err = generate(tmp_path, capsys, native, "[]\n")
    assert rc == 1 and err.count("\n") == 1, err
    assert err.startswith(f"error: {tmp_path / 'nf.yaml'}:{line}: entry 'ext::"), err
    assert words in err, err


# ---------------------------------------------------------------- what is generated

def test_each_device_type_gets_atens_wrapper_of_its_policy(tmp_path):
    cpp = render(tmp_path, MM + "  autocast:\n    CPU: fp32\n    CUDA: lower_precision_fp\n")["ops/ext_mm.cpp"]
    assert ("at::autocast::CastPolicy::fp32, c10::DeviceType::CPU" in cpp
            and "at::autocast::CastPolicy::lower_precision_fp, c10::DeviceType::CUDA" in cpp)
    assert registered(cpp)[-2:] == [("AutocastCPU", "mm", "ext_mm_autocast_cpu::call"),
                                    ("AutocastCUDA", "mm", "ext_mm_autocast_cuda::call")]
    # CUDA's only where the CUDA kernels are built (emit/op_kernels/registration.py)
    guarded = re.findall(r"#ifndef AUTOGRAD_EXT_WITHOUT_CUDA_KERNELS\n(.*?)\n#endif", cpp, re.S)
    assert [g for g in guarded if "AutocastCPU" in g] == [] and len([g for g in guarded if "AutocastCUDA" in g]) == 2
    # the op again below autocast: its own handle, not the hand-written kernel
    assert '.findSchemaOrThrow("ext::mm", "")' in cpp and "return op.call(self, mat2);" in cpp


def test_one_device_type_alone(tmp_path):
    cpp = render(tmp_path, MM + "  autocast: {CUDA: fp32}\n")["ops/ext_mm.cpp"]
    assert [k for k, _, _ in registered(cpp)] == ["Autograd", "CPU", "AutocastCUDA"]


def test_fp32_append_dtype_redispatches_to_the_overload_with_the_dtype(tmp_path):
    native = NORM + NORM_DTYPE + "  dispatch:\n    CPU: norm_dtype_cpu\n"
    cpp = render(tmp_path, MM + native)["ops/ext_norm_Scalar.cpp"]
    assert ("at::autocast::CastPolicy::fp32_append_dtype, c10::DeviceType::CPU,\n"
            "    at::Tensor(const at::Tensor &, const at::Scalar &), "
            "at::Tensor(const at::Tensor &, const ::std::optional<at::Scalar> &, at::ScalarType), "
            "&ext_norm_Scalar_with_dtype>::type;") in cpp
    assert '.findSchemaOrThrow("ext::norm", "ScalarOpt_dtype")' in cpp and "return op.call(self, p, dtype);" in cpp


def test_vmap_plumbing_is_registered_for_functorch_batched_with_its_rule(tmp_path):
    files = render(tmp_path, MM + "  vmap: pointwise\n")
    cpp = files["ops/ext_mm.cpp"]
    assert ("FuncTorchBatched", "mm", "ext_mm_batched") in registered(cpp)
    assert "auto results = ext_mm_pointwise_rule(self_value, self_bdim, mat2_value, mat2_bdim);" in cpp
    assert "at::functorch::unwrapTensorAtLevel(self, cur_level)" in cpp
    assert "#include <ATen/functorch/PlumbingHelper.h>" in cpp
    assert "namespace ext::native {\n\n// The batch rule" not in files["ops/ext_mm.h"]   # a kind: nothing to declare


def test_a_hand_written_rule_is_declared_printed_and_checked(tmp_path, capsys):
    native = MM + "  vmap: {rule: mm_batch_rule}\n"
    files = render(tmp_path, native)
    decl = ("::std::tuple<at::Tensor, std::optional<int64_t>> mm_batch_rule(const at::Tensor & self, "
            "std::optional<int64_t> self_bdim, const at::Tensor & mat2, std::optional<int64_t> mat2_bdim);")
    assert decl in files["ops/ext_mm.h"]
    assert "auto results = ::ext::native::mm_batch_rule(self_value, self_bdim, mat2_value, mat2_bdim);" in \
        files["ops/ext_mm.cpp"]
    assert main(["signatures", str(tmp_path / "nf.yaml")]) == 0
    assert decl in capsys.readouterr().out
    # the library's check names the rule a library leaves undefined, at its yaml line
    spec = parse_native_functions(str(tmp_path / "nf.yaml"), native, None)
    units = [u.subject for u in load_units(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml")) if u.kind.value == "kernel"]
    assert [k.name for k in declared_kernels(units)] == ["mm_cpu", "mm_batch_rule"]
    nm = ["                 U ext::native::mm_batch_rule(at::Tensor const&, std::optional<long>, at::Tensor const&, "
          "std::optional<long>)"]
    [msg] = missing_kernels(declared_kernels(units), nm)
    assert msg.startswith(f"{tmp_path / 'nf.yaml'}:4: entry 'ext::mm': the FuncTorchBatched kernel 'mm_batch_rule'")
    assert spec.functions[0].vmap.rule == "mm_batch_rule"


def test_an_in_place_op_refuses_an_unbatched_self_and_returns_it(tmp_path):
    cpp = render(tmp_path, MM + "- func: ext::mul_(Tensor(a!) self, Tensor other) -> Tensor(a!)\n  dispatch:\n"
                                "    CPU: mul_\n  vmap: pointwise\n")["ops/ext_mul_.cpp"]
    assert "TORCH_CHECK(self_bdim.has_value() || !(other_bdim.has_value())," in cpp
    assert "ext_mul__pointwise_rule(self_value, self_bdim, other_value, other_bdim);\n  return self;" in cpp


def test_an_op_without_the_keys_is_generated_as_before(tmp_path):
    cpp = render(tmp_path, MM)["ops/ext_mm.cpp"]
    assert [k for k, _, _ in registered(cpp)] == ["Autograd", "CPU"]
    assert "autocast" not in cpp and "functorch" not in cpp


def test_the_declarations_survive_the_native_cache(tmp_path):
    native = MM + "  autocast: {CPU: fp32}\n  vmap: {rule: r}\n" + NORM + NORM_DTYPE
    spec = parse_native_functions("nf.yaml", native, None)
    again = decode(encode(spec))
    assert [(f.autocast, f.vmap) for f in again.functions] == [(f.autocast, f.vmap) for f in spec.functions]
    assert again.functions[1].autocast.redispatch.overload == "ScalarOpt_dtype"


def test_the_json_shim_is_written_where_an_op_has_vmap_and_pruned_where_none_has(tmp_path, capsys):
    """(What functorch's DynamicLayer.h includes and torch's wheel lacks: emit/op_kernels/vmap.py.)"""
    shim = tmp_path / "gen" / "nlohmann" / "json.hpp"
    assert generate(tmp_path, capsys, MM + "  vmap: pointwise\n") == (0, "")
    text = shim.read_text()
    assert text.startswith("// @generated") and "#include_next <nlohmann/json.hpp>" in text
    assert generate(tmp_path, capsys, MM) == (0, "")
    assert not shim.exists()
    (tmp_path / "gen" / "nlohmann" / "mine.hpp").write_text("// a file of the user's\n")
    rc, err = generate(tmp_path, capsys, MM + "  vmap: pointwise\n")
    assert rc == 0 and err.endswith("not generated by this tool, left alone: nlohmann/mine.hpp\n"), err
    assert shim.exists() and (tmp_path / "gen" / "nlohmann" / "mine.hpp").exists()
