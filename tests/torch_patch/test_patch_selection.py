"""Which Functions a patch of libtorch's own defines, and what it refuses
(codegen/engine/patch_selection.py), on small specs in ATen's shape whose
"installed" classes are our own rendering of the unedited specs."""

import os

import pytest

from autograd_scons.codegen.emit.functions.function_files import render_op
from autograd_scons.codegen.emit.options import LIBTORCH_NAMESPACE, EmitOptions, PatchTarget
from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.codegen.engine.incremental import update
from autograd_scons.codegen.engine.patch_kernels import NOT_NAMED
from autograd_scons.codegen.engine.patch_selection import BOUND_LOCALLY, HIDDEN_HELPER, called, select
from autograd_scons.codegen.tree import PATCH_REFERENCE, PATCH_SUMMARY
from autograd_scons.codegen.engine.units import load_model, load_units

# (each with a backend kernel: libtorch gives such an op an Autograd kernel)
NATIVE = "".join(f"- func: {schema}\n  dispatch:\n    CPU: kernel_{i}\n" for i, schema in enumerate((
    "sin(Tensor self) -> Tensor", "cos(Tensor self) -> Tensor", "mul.Tensor(Tensor self, Tensor other) -> Tensor",
    "eq_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", "angle(Tensor self) -> Tensor")))
SIN = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
DERIVATIVES = SIN + """
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self

- name: eq_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
  self: zeros_like(self)

- name: angle(Tensor self) -> Tensor
  self: angle_backward(grad, self)
"""
# What libtorch defines with no symbol a patch can reach, and why, as
# torch_patch/libtorch_locals.py reads it off the library.
CLONES = "libtorch_cpu.so has only compiler clones of it"
HIDDEN = (("TypeAndSize::zeros", "its symbol table is stripped"), ("angle_backward", CLONES))


@pytest.fixture
def specs(tmp_path):
    """(write(derivatives text) -> its path, a PatchTarget maker, the output folder)."""
    nf = tmp_path / "native_functions.yaml"
    nf.write_text(NATIVE)
    reference = tmp_path / "derivatives.yaml"
    reference.write_text(DERIVATIVES)
    # libtorch's declarations: the unedited specs' classes, as our emitter declares them
    opts = EmitOptions(namespace="autograd_ext::generated")
    headers = [text for u in load_units(str(nf), str(reference), kernels=False)
               for path, text in render_op(u.subject, opts).items() if path.endswith(".h")]
    functions_h = tmp_path / "Functions.h"
    functions_h.write_text("\n".join(headers))

    def write(text):
        path = tmp_path / "edited.yaml"
        path.write_text(text)
        return str(path)

    def target(**kw):
        kw.setdefault("unusable_helpers", HIDDEN)
        return PatchTarget(str(functions_h), (str(nf), str(reference), None), **kw)

    out = tmp_path / "gen"
    out.mkdir()
    return write, target, str(nf), str(out)


def chosen(specs, text, **kw):
    write, target, nf, out = specs
    return select(load_units(nf, write(text), kernels=False), target(**kw), out)


def test_unedited_specs_patch_nothing_and_an_edit_patches_its_function(specs):
    assert chosen(specs, DERIVATIVES).units == []
    edited = chosen(specs, DERIVATIVES.replace("self.cos().conj()", "self.cos().conj() * 3"))
    assert [u.name for u in edited.units] == edited.edited == ["SinBackward0"]


def test_all_patches_what_can_be_and_counts_the_rest_by_reason(specs):
    s = chosen(specs, DERIVATIVES, every=True)
    assert [u.name for u in s.units] == ["SinBackward0", "MulBackward0"] and s.edited == []
    assert s.left_out == {f"{HIDDEN_HELPER} (its symbol table is stripped)": ["EqBackward0"],
                          f"{HIDDEN_HELPER} ({CLONES})": ["AngleBackward0"]}
    assert s.helpers == {"TypeAndSize::zeros": ["EqBackward0"], "angle_backward": ["AngleBackward0"]}
    bound = chosen(specs, DERIVATIVES, every=True, bound_locally=("MulBackward0",))
    assert bound.left_out[BOUND_LOCALLY] == ["MulBackward0"]


def test_an_edit_that_saves_another_value_is_refused_at_its_entry(specs):
    text = DERIVATIVES.replace("grad * self.cos().conj()", "grad * result.cos().conj()")
    with pytest.raises(SpecError) as e:
        chosen(specs, text)
    assert (e.value.line, e.value.entry) == (1, "sin(Tensor self) -> Tensor")
    assert "saves result_" in str(e.value) and "PyTorch rebuilt" in str(e.value)
    assert "\n" not in str(e.value)


def test_a_new_entry_is_refused(specs):
    text = DERIVATIVES + "\n- name: cos(Tensor self) -> Tensor\n  self: -grad * self.sin().conj()\n"
    with pytest.raises(SpecError, match="'CosBackward0' is not a class of the installed libtorch.*rebuilt"):
        chosen(specs, text)


def test_an_edited_formula_using_an_unusable_helper_is_refused_unless_functions_manual(specs):
    text = DERIVATIVES.replace("angle_backward(grad, self)", "angle_backward(grad, self) * 2")
    with pytest.raises(SpecError, match=f"uses angle_backward, which libtorch defines with no symbol a patch can "
                                        f"reach: {CLONES}.*--functions-manual"):
        chosen(specs, text)
    # FunctionsManual.cpp compiled in (or a usable symbol): nothing is refused
    assert [u.name for u in chosen(specs, text, unusable_helpers=()).units] == ["AngleBackward0"]
    # a member of a saved value's class (libtorch keeps TypeAndSize::zeros local)
    with pytest.raises(SpecError, match="uses TypeAndSize::zeros"):
        chosen(specs, DERIVATIVES.replace("self: zeros_like(self)", "self: zeros_like(self) * 2"))


def test_called_names_the_helpers_and_the_saved_values_members(specs):
    write, target, nf, out = specs
    infos = {u.name: u.subject for u in load_units(nf, write(DERIVATIVES), kernels=False)}
    assert {"TypeAndSize::zeros"} <= called(infos["EqBackward0"])
    assert "angle_backward" in called(infos["AngleBackward0"])
    assert "cos" not in called(infos["SinBackward0"])   # a member call on a tensor is not a helper


def test_the_references_digests_are_kept_and_a_damaged_copy_is_made_again(specs, monkeypatch):
    write, target, nf, out = specs
    chosen(specs, DERIVATIVES)
    cache = os.path.join(out, PATCH_REFERENCE)
    assert os.path.isfile(cache)
    import autograd_scons.codegen.engine.patch_selection as ps
    loads = []
    monkeypatch.setattr(ps, "load_units", lambda *a, **k: loads.append(a) or load_units(*a, **k))
    chosen(specs, DERIVATIVES)
    assert loads == []
    with open(cache, "w") as f:
        f.write("{not json")
    assert chosen(specs, DERIVATIVES.replace("* other", "* other * 2")).edited == ["MulBackward0"]
    assert len(loads) == 1


def test_a_patch_tree_defines_libtorchs_classes_and_records_the_selection(specs):
    write, target, nf, out = specs
    opts = EmitOptions(namespace=LIBTORCH_NAMESPACE, includes=("torch/csrc/autograd/FunctionsManual.h",),
                       kernels=False, python=False, patch=target(every=True))
    result = update(out, FunctionsRequest(nf, write(DERIVATIVES), None, opts, unity=0))
    assert sorted(result.units) == ["MulBackward0", "SinBackward0"]
    files = sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs
                   if not f.startswith("."))
    assert "Functions.h" not in files and not any(f.startswith("functions/") and f.endswith(".h") for f in files)
    # it defines no op: nothing of it keys torch.compile's caches (codegen/emit/cache_key.py)
    assert "cache_key.cpp" not in files and "cache_key.cpp" not in result.sources
    with open(os.path.join(out, "support.cpp")) as f:
        assert "cache_key_tag" not in f.read()
    with open(os.path.join(out, "functions", "SinBackward0.cpp")) as f:
        text = f.read()
    assert "#include <torch/csrc/autograd/generated/Functions.h>" in text
    assert "namespace torch::autograd::generated {" in text
    with open(os.path.join(out, "load_check.h")) as f:
        assert "inline void check_loaded() {}" in f.read()   # nothing refused: the classes are libtorch's
    with open(os.path.join(out, "prelude_impl.h")) as f:
        assert "inline void copy_range" not in f.read()   # libtorch's own, beside ours, would be ambiguous
    with open(os.path.join(out, PATCH_SUMMARY)) as f:
        assert f'"{HIDDEN_HELPER} (its symbol table is stripped)": [\n   "EqBackward0"' in f.read()


def test_libtorchs_namespace_stays_refused_to_extensions():
    with pytest.raises(ValueError, match="libtorch's own"):
        EmitOptions(namespace=LIBTORCH_NAMESPACE)
    target = PatchTarget("Functions.h", ("nf", "d", None))
    with pytest.raises(ValueError, match="without kernels or Python bindings"):
        EmitOptions(namespace=LIBTORCH_NAMESPACE, patch=target)
    with pytest.raises(ValueError):
        EmitOptions(namespace="myops::autograd", kernels=False, python=False, patch=target)


# ----------------------------------------------- the patch's own kernels and classes

def kernel_target(specs, **kw):
    kw.setdefault("complex_ops", ("sin", "mul"))
    return specs[1](**kw)


def chosen_with_kernels(specs, text, **kw):
    write, _, nf, out = specs
    path = write(text)
    loaded = load_model(nf, path, kernels=False)
    return select(loaded.units, kernel_target(specs, **kw), out, loaded)


def test_kernels_replace_every_op_that_can_have_one_and_count_the_rest(specs):
    s = chosen_with_kernels(specs, DERIVATIVES, kernels=True, unusable_helpers=())
    assert s.kernels == ["aten::sin", "aten::mul.Tensor", "aten::eq_.Scalar", "aten::angle"]
    assert s.kernels_left_out == {"no derivatives entry": ["aten::cos"]}
    assert s.own == [] and [u.name for u in s.units if u.kind.value == "function"] == []
    kernel = next(u for u in s.units if u.name == "aten::sin").subject
    assert kernel.function_class == "torch::autograd::generated::SinBackward0" and kernel.complex_ok
    assert not next(u for u in s.units if u.name == "aten::angle").subject.complex_ok


def test_an_edit_that_changes_what_is_saved_gets_its_own_class_and_kernels(specs):
    text = DERIVATIVES.replace("grad * self.cos().conj()", "grad * result.cos().conj()")
    s = chosen_with_kernels(specs, text)
    assert s.own == ["SinBackward0"] == s.edited and s.kernels == ["aten::sin"]
    own = next(u for u in s.units if u.name == "SinBackward0")
    assert own.bound   # (its Python type: the patch's own bindings)
    files = own.render(EmitOptions(namespace=LIBTORCH_NAMESPACE, kernels=False, python=True,
                                   patch=kernel_target(specs)))
    assert "struct SinBackward0 : public TraceableFunction" in files["functions/SinBackward0.h"]
    assert "namespace torch::autograd::generated::autograd_scons_patch {" in files["functions/SinBackward0.h"]
    kernel = next(u for u in s.units if u.name == "aten::sin").subject
    assert kernel.function_class == "torch::autograd::generated::autograd_scons_patch::SinBackward0"


def test_a_new_entry_gets_its_own_class_and_kernel(specs):
    text = DERIVATIVES + "\n- name: cos(Tensor self) -> Tensor\n  self: -grad * self.sin().conj()\n"
    s = chosen_with_kernels(specs, text)
    assert s.own == ["CosBackward0"] and s.kernels == ["aten::cos"]


def test_an_edit_whose_op_cannot_get_a_kernel_is_refused_at_its_entry(specs):
    write, target, nf, out = specs
    with open(nf, "a") as f:
        f.write("- func: scale_into(Tensor(a!) buffer, Tensor x) -> Tensor\n  dispatch:\n    CPU: scale_into\n")
    text = DERIVATIVES + "\n- name: scale_into(Tensor(a!) buffer, Tensor x) -> Tensor\n  x: grad * 2\n"
    with pytest.raises(SpecError) as e:
        chosen_with_kernels(specs, text)
    assert "its op scale_into keeps libtorch's Autograd kernel (not supported by the kernel generator: a " \
           "mutable op)" in str(e.value) and "needs PyTorch rebuilt" in str(e.value)
    assert e.value.entry == "scale_into(Tensor(a!) buffer, Tensor x) -> Tensor"


def test_a_patch_tree_with_kernels_is_generated_whole(specs):
    """The update over a patch whose units include ATen ops' kernels (not
    an extension's: no declared kernel, no run-time check, no vmap shim).
    It raised AttributeError on AtenKernel as the merge of issues 53 and 54
    first stood, which only the compile tier's OpInfo proof reached."""
    write, _, nf, out = specs
    opts = EmitOptions(namespace=LIBTORCH_NAMESPACE, includes=("torch/csrc/autograd/FunctionsManual.h",),
                       kernels=False, python=False,
                       patch=kernel_target(specs, every=True, kernels=True, unusable_helpers=()))
    result = update(out, FunctionsRequest(nf, write(DERIVATIVES), None, opts, unity=0))
    kernels = sorted(u for u in result.units if result.kinds[u].value == "kernel")
    assert kernels == sorted(["aten::sin", "aten::mul.Tensor", "aten::eq_.Scalar", "aten::angle"])
    assert result.kernels == [] and result.unchecked == {} and result.code_digest == ""
    assert os.path.isfile(os.path.join(out, "ops", "aten_sin.cpp"))


def test_a_patch_with_kernels_parses_the_specs_once(specs, monkeypatch):
    """The ATen kernels are chosen from the update's parsed specs: with
    --kernels the edited specs are read and parsed once (the kernels'
    selection parsed them a second time before)."""
    import autograd_scons.codegen.parse.load_derivatives as ld
    write, _, nf, out = specs
    path = write(DERIVATIVES)
    opts = EmitOptions(namespace=LIBTORCH_NAMESPACE, includes=("torch/csrc/autograd/FunctionsManual.h",),
                       kernels=False, python=False,
                       patch=kernel_target(specs, every=True, kernels=True, unusable_helpers=()))
    update(out, FunctionsRequest(nf, path, None, opts, unity=0))   # (the reference's digests kept)
    parsed = []
    real = ld.load_specs
    monkeypatch.setattr(ld, "load_specs", lambda *a, **k: parsed.append(a[1]) or real(*a, **k))
    write(DERIVATIVES.replace("grad * self.cos().conj()", "grad * self.cos().conj() * 1"))
    result = update(out, FunctionsRequest(nf, path, None, opts, unity=0))
    assert "aten::sin" in result.units
    assert parsed == [path]


def test_only_narrows_all_and_its_kernels_to_the_functions_it_names(specs):
    s = chosen_with_kernels(specs, DERIVATIVES, every=True, kernels=True, only=("SinBackward0", "EqBackward0"))
    # (EqBackward0 named but unpatchable: counted by its reason; the others are not asked for, not counted)
    assert [u.name for u in s.units if u.kind.value == "function"] == ["SinBackward0"]
    assert s.left_out == {f"{HIDDEN_HELPER} (its symbol table is stripped)": ["EqBackward0"]}
    assert s.kernels == ["aten::sin", "aten::eq_.Scalar"]
    assert s.kernels_left_out[NOT_NAMED] == ["aten::mul.Tensor", "aten::angle"]
    # an edit is patched whether named or not: the specs ask for it
    edited = chosen(specs, DERIVATIVES.replace("grad * other", "grad * other * 2"), every=True,
                    only=("SinBackward0",))
    assert [u.name for u in edited.units] == ["SinBackward0", "MulBackward0"] and edited.edited == ["MulBackward0"]


def test_only_naming_no_function_of_the_specs_is_refused_in_one_line(specs):
    with pytest.raises(SpecError) as e:
        chosen(specs, DERIVATIVES, every=True, only=("SinBackward0", "SinBackward9", "x" * 10000))
    assert "only= names 2 that are no Function of these specs: 'SinBackward9', 'xxx" in str(e.value)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300


@pytest.mark.parametrize("args, says", [
    (["--only", "SinBackward0"], "patch-torch: --only narrows --all"),
    (["--all", "--only", "@{tmp}/missing.txt"], "patch-torch: --only @{tmp}/missing.txt: No such file or directory"),
])
def test_only_without_all_or_its_file_is_one_line_and_builds_nothing(tmp_path, args, says):
    from support.patch_helpers import environ, patch_torch
    proc = patch_torch(environ(tmp_path), tmp_path / "patch", *[a.format(tmp=tmp_path) for a in args])
    assert proc.returncode == 2 and proc.stderr.startswith(says.format(tmp=tmp_path)), proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "patch").exists()
