"""Arguments named as a word the formulas reserve (`grad`, `grads`,
`grad_<output>`, `result`, `grad_input_mask`, `retain_variables`:
codegen/parse/grad_usage.py) or as a variable of the generated code
(codegen/emit/local_names.py): where the two would meet, the entry is refused
in one line at its yaml line, naming the word and the rename, instead of a
C++ error inside generated code after a long build (torchvision's
`_roi_align_backward(Tensor grad, ...)` with a double-backward formula).
Where they do not meet (torch's own `_pdist_backward(Tensor grad, ...)`,
whose formulas never say `grad`), nothing changes.  Generator only."""

import os
import re

import pytest

from autograd_scons.codegen.emit.local_names import FUNCTION_LOCALS, KERNEL_LOCALS
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.engine.units import load_units
from autograd_scons.codegen.templates import FOLDER, load, template_files

OPTS = EmitOptions(namespace="rv::autograd")


def generate(tmp_path, schema, formulas):
    nf, dv = tmp_path / "native_functions.yaml", tmp_path / "derivatives.yaml"
    nf.write_text(f"# an op\n- func: rv::{schema}\n  dispatch:\n    CPU: k\n")
    dv.write_text("# its formulas\n\n- name: " + schema + "\n" + "".join(f"  {k}: {v}\n" for k, v in formulas))
    files = {}
    for unit in load_units(str(nf), str(dv)):
        files.update(unit.render(OPTS))
    return files


def refusal(tmp_path, schema, formulas) -> str:
    with pytest.raises(SpecError) as e:
        generate(tmp_path, schema, formulas)
    text = str(e.value)
    assert "\n" not in text
    return text


BACKWARD = "pool_backward(Tensor grad, Tensor rois, SymInt n) -> Tensor"


def test_an_argument_named_grad_that_a_formula_says_is_refused_at_its_entry(tmp_path):
    text = refusal(tmp_path, BACKWARD, [("grad", "rv::pool(grad, rois, n)"), ("rois", "non_differentiable")])
    assert text == (f"{tmp_path / 'derivatives.yaml'}:3: entry '{BACKWARD}': argument 'grad' has a name the "
                    f"formulas reserve: in a formula, 'grad' is the incoming gradient; rename the argument, e.g. "
                    f"to 'grad_output', in its schema and in this entry's name (schema at "
                    f"{tmp_path / 'native_functions.yaml'}:2)")


def test_the_renamed_argument_and_grad_in_its_formula_generate(tmp_path):
    """The rename the refusal asks for: `grad` in the formula is then the
    incoming gradient, `grad_output` the argument."""
    schema = BACKWARD.replace("Tensor grad,", "Tensor grad_output,")
    files = generate(tmp_path, schema, [("grad_output", "rv::pool(grad, rois, n) * grad_output"),
                                        ("rois", "non_differentiable")])
    cpp = files["functions/PoolBackwardBackward0.cpp"]
    assert "const auto& grad = grads[0];" in cpp   # the incoming gradient
    assert "    at::Tensor& grad_output," in cpp        # the argument, saved under its own name


def test_an_argument_named_grad_that_no_formula_says_generates(tmp_path):
    # torch's own _pdist_backward(Tensor grad, ...) has `grad: not_implemented(...)`
    files = generate(tmp_path, BACKWARD, [("grad", 'not_implemented("pool_backward")'),
                                          ("rois", "non_differentiable")])
    assert "PoolBackwardBackward0" in files["functions/PoolBackwardBackward0.cpp"]
    # the port's other way out: a named output, whose gradient is grad_<name>
    named = BACKWARD.replace("-> Tensor", "-> Tensor grad_input")
    files = generate(tmp_path, named, [("grad", "rv::pool(grad_grad_input, rois, n)"),
                                       ("rois", "non_differentiable")])
    assert "const auto& grad_grad_input = grads[0];" in files["functions/PoolBackwardBackward0.cpp"]


@pytest.mark.parametrize("schema,formulas,word,meaning", [
    ("two(Tensor self, Tensor grads) -> (Tensor a, Tensor b)", [("self", "grads[0] * grads + grads[1]")],
     "grads", "the incoming gradients"),
    ("named(Tensor self, Tensor grad_y) -> Tensor y", [("self", "grad_y * 2")],
     "grad_y", "the gradient of the output 'y'"),
    ("keep(Tensor self, bool retain_variables) -> Tensor", [("self", '"retain_variables ? grad : grad * 2"')],
     "retain_variables", "whether the graph is kept after the backward"),
    # as torchgen: refused whether or not a formula uses them
    ("res(Tensor self, Tensor result) -> Tensor", [("self", "grad")], "result", "the output"),
    ("mask(Tensor self, bool[2] grad_input_mask) -> Tensor", [("self", "grad")], "grad_input_mask",
     "which inputs need a gradient"),
], ids=lambda v: v if isinstance(v, str) and " " not in v else None)
def test_every_word_the_formulas_reserve(tmp_path, schema, formulas, word, meaning):
    text = refusal(tmp_path, schema, formulas)
    assert f"argument '{word}' has a name the formulas reserve: in a formula, '{word}' is {meaning};" in text


@pytest.mark.parametrize("name", sorted(FUNCTION_LOCALS) + ["self_ix"])
def test_a_saved_argument_named_as_a_variable_of_the_function_is_refused(tmp_path, name):
    schema = f"f(Tensor self, Tensor {name}) -> Tensor"
    text = refusal(tmp_path, schema, [("self", f"grad * {name}"), (name, "non_differentiable")])
    assert text.startswith(f"{tmp_path / 'derivatives.yaml'}:3: entry '{schema}': '{name}' is also the name of a "
                           f"variable of the generated Function: rename it, e.g. to '{name}_arg'"), text


def test_an_argument_named_as_a_variable_of_the_function_that_is_not_saved_generates(tmp_path):
    generate(tmp_path, "f(Tensor self, Tensor gen) -> Tensor", [("self", "grad * 2"), ("gen", "non_differentiable")])


@pytest.mark.parametrize("name", sorted(KERNEL_LOCALS))
def test_an_argument_named_as_a_variable_of_the_autograd_kernel_is_refused(tmp_path, name):
    schema = f"f(Tensor self, int {name}) -> Tensor"
    text = refusal(tmp_path, schema, [("self", "grad * 2")])
    assert text.startswith(f"{tmp_path / 'native_functions.yaml'}:2: entry 'rv::{schema}': '{name}' is also the "
                           f"name of a variable of the generated Autograd kernel: rename it"), text


def test_the_listed_variables_are_the_generated_codes():
    """A name left in the lists after its template stopped declaring it
    would refuse a valid schema (the lists are complete against a compile
    of every one of them, docs/yaml-reference.md)."""
    texts = [load(name).text for name in template_files()]
    emit = os.path.join(FOLDER, "..", "emit")
    for folder, _, names in sorted(os.walk(emit)):   # (emit/ and its folders, one per thing emitted)
        for emitter in sorted(n for n in names if n.endswith(".py") and n != "local_names.py"):
            with open(os.path.join(folder, emitter)) as f:
                texts.append(f.read())
    for name in FUNCTION_LOCALS | KERNEL_LOCALS:
        # declared: a type, then the name, then its initialiser or the end of a parameter
        assert any(re.search(rf"[\w>&*] {name}( =|\(|\)|,|;| \{{)", t) for t in texts), name
