"""Bad specs refused while parsing, at their yaml line (issue 60): each
class below was accepted before, then silently dropped or broken in the
generated code, or refused only by the C++ compiler after a whole bucket's
compile.  Each case is the smallest spec of its class, from the fuzz
campaign's findings."""

import pytest

from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.parse.extension_ops import kernel_units
from autograd_scons.codegen.parse.load_derivatives import infos_from_specs, load_specs

NATIVE = """\
- func: myops::mul(Tensor self, Tensor other) -> Tensor
  variants: function

- func: myops::stack2(Tensor[] self) -> Tensor
  variants: function

- func: myops::touch_(Tensor(a!) self) -> ()
  variants: function
"""

DERIVATIVES = """\
- name: mul(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self
  result: other_t * self_p + self_t * other_p

- name: stack2(Tensor[] self) -> Tensor
  self: unbind_backward(grad, 0)
"""


def parse(tmp_path, native=NATIVE, derivatives=DERIVATIVES):
    (tmp_path / "nf.yaml").write_bytes(native.encode() if isinstance(native, str) else native)
    (tmp_path / "d.yaml").write_text(derivatives)
    specs = load_specs(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml"))
    infos = infos_from_specs(specs)
    return infos, kernel_units(specs.native, infos)


def refused(tmp_path, **texts) -> str:
    with pytest.raises(SpecError) as e:
        parse(tmp_path, **texts)
    return str(e.value)


def test_the_base_specs_parse(tmp_path):
    infos, units = parse(tmp_path)
    assert [u.stem for u in units] == ["myops_mul", "myops_stack2", "myops_touch_"]


def test_an_extension_entry_without_its_namespace_is_refused_at_its_line(tmp_path):
    """`- func: stack2(...)` beside `myops::` ops was taken as an ATen op: its
    registration and kernel vanished, its Function was still generated."""
    line = refused(tmp_path, native=NATIVE.replace("func: myops::stack2", "func: stack2"))
    assert line == (f"{tmp_path / 'nf.yaml'}:4: entry 'stack2(Tensor[] self) -> Tensor': 'func:' has no "
                    "namespace, so 'stack2' would be an ATen op, which an extension does not register: write "
                    "'myops::stack2(...)' as the file's other ops (line 1), or 'aten::stack2(...)' for an ATen op")


def test_a_file_of_aten_ops_alone_keeps_its_bare_names(tmp_path):
    """torch's own native_functions.yaml writes no namespace: its ops are ATen's."""
    native = NATIVE.replace("myops::", "").replace("- func: touch_(Tensor(a!) self) -> ()\n  variants: function\n",
                                                   "")
    infos, units = parse(tmp_path, native=native)
    assert units == [] and [i.op for i in infos] == ["MulBackward0", "Stack2Backward0"]


@pytest.mark.parametrize("member", ["scalar_type()", "sym_sizes()", "options()", "dim()"])
def test_a_saved_member_of_a_tensor_list_is_refused_at_the_formula(tmp_path, member):
    """With `Tensor[] self`, `self.scalar_type()` was saved as a member the
    list does not have: the generated ops/<op>.cpp did not compile."""
    line = refused(tmp_path, derivatives=DERIVATIVES.replace("unbind_backward(grad, 0)",
                                                             f"unbind_backward(grad, self.{member})"))
    assert line.startswith(f"{tmp_path / 'd.yaml'}:7: entry 'stack2(Tensor[] self) -> Tensor': formula for "
                           f"'self': 'self.{member}': 'self' is a 'at::TensorList', not a 'at::Tensor', so it has "
                           f"no {member}"), line


def test_formulas_of_an_op_that_returns_nothing_are_refused(tmp_path):
    derivatives = DERIVATIVES + "\n- name: touch_(Tensor(a!) self) -> ()\n  self: grad\n"
    line = refused(tmp_path, derivatives=derivatives)
    assert line.startswith(f"{tmp_path / 'd.yaml'}:9: entry 'touch_(Tensor(a!) self) -> ()': the op returns "
                           "nothing ('touch_(...) -> ()')"), line


@pytest.mark.parametrize("formula, problem", [
    ("grad * (other", "unbalanced brackets: '(' is never closed"),
    ("grad * other)", "unbalanced brackets: ')' closes nothing"),
    ("grad.index_select(0, other[0)]", "unbalanced brackets: '[' is closed by ')'"),
])
def test_unbalanced_brackets_are_refused_at_the_formula(tmp_path, formula, problem):
    line = refused(tmp_path, derivatives=DERIVATIVES.replace("self: grad * other", f"self: {formula}"))
    assert line == f"{tmp_path / 'd.yaml'}:2: entry 'mul(Tensor self, Tensor other) -> Tensor': formula for " \
        f"'self': {problem}"


@pytest.mark.parametrize("old, new, name", [
    ("self: grad * other", "self: grad * betax", "betax"),
    ("result: other_t * self_p + self_t * other_p", "result: other_t * input_p2", "input_p2"),
    ("self: grad * other", "self: auto_line", "auto_line"),
])
def test_a_name_no_formula_knows_is_refused_at_the_formula(tmp_path, old, new, name):
    line = refused(tmp_path, derivatives=DERIVATIVES.replace(old, new))
    key = new.split(":")[0]
    where = 2 if key == "self" else 4
    assert line.startswith(f"{tmp_path / 'd.yaml'}:{where}: entry 'mul(Tensor self, Tensor other) -> Tensor': "
                           f"formula for '{key}': '{name}' is not an input, an output or a variable of formulas"), line


def test_what_a_formula_may_name_is_accepted(tmp_path):
    """Calls (the includes= headers' helpers, left to the compiler), qualified
    names, members, literals, comments, lambdas and constants are not names
    to check."""
    formula = ('my_helper(grad, other, /* keep betax */ at::kFloat, std::vector<int64_t>{1}, "x)", M_PI, '
               'kHalf, fmap(other.sym_sizes(), [](c10::SymInt i){return -i;}), c10::Layout::Strided)')
    parse(tmp_path, derivatives=DERIVATIVES.replace("self: grad * other", f"self: '{formula}'"))


def test_non_utf8_input_is_located_at_its_line_and_column(tmp_path):
    native = NATIVE.encode().replace(b"Tensor[] self", b"Tensor[] s\xe9lf")
    line = refused(tmp_path, native=native)
    assert line == (f"{tmp_path / 'nf.yaml'}:4: not UTF-8 text: byte 0xe9 at column 33 (invalid continuation "
                    "byte); save the file as UTF-8")


def test_a_control_character_is_located_at_its_line_and_column(tmp_path):
    """A NUL was refused as 'malformed YAML ... position 3446', with no line
    (the fuzz's first finding)."""
    line = refused(tmp_path, native=NATIVE.replace("Tensor[] self", "Tensor[] \0self"))
    assert line == (f"{tmp_path / 'nf.yaml'}:4: malformed YAML: character 0x00 at column 32 is not allowed "
                    "(a control character)")


def test_a_long_name_is_clipped_in_the_error(tmp_path):
    long_name = "x" * 10_000
    line = refused(tmp_path, derivatives=DERIVATIVES.replace("self: grad * other", f"self: grad * {long_name}"))
    assert len(line) < 500 and f"'{'x' * 80}...'" in line, line[:600]
