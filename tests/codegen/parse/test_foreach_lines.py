"""A derived foreach Function's formulas carry the line of the entry they
come from (issue 60): patch-torch's edit of sin's formula that calls a
helper no header declares failed first in the derived
ForeachSinBackward0.cpp, at a line of the generated code, the yaml line
only lower in the log.  Its formulas are now numbered as the reference
entry's (derivative_lines.h defines their macros), so the compiler's first
error names derivatives.yaml's line too."""

from autograd_scons.codegen.emit.lines import line_macro, render_lines
from autograd_scons.codegen.engine.units import Kind, load_units

NATIVE = """\
- func: sin(Tensor self) -> Tensor
  variants: function, method

- func: _foreach_sin(Tensor[] self) -> Tensor[]
  variants: function
"""

DERIVATIVES = """\
# sin's formulas: the foreach op's are derived from them
- name: sin(Tensor self) -> Tensor
  self: grad * handle_r_to_c(self, self.cos().conj())
  result: auto_element_wise
"""


def test_a_derived_foreach_function_is_numbered_as_its_reference_entry(tmp_path):
    (tmp_path / "native_functions.yaml").write_text(NATIVE)
    (tmp_path / "derivatives.yaml").write_text(DERIVATIVES)
    units = load_units(str(tmp_path / "native_functions.yaml"), str(tmp_path / "derivatives.yaml"), kernels=False)
    infos = {u.name: u.subject for u in units if u.kind is Kind.FUNCTION}
    assert sorted(infos) == ["ForeachSinBackward0", "SinBackward0"]
    derived = infos["ForeachSinBackward0"]
    assert [d.line for d in derived.derivatives] == [3]
    assert [f.line for f in derived.forward_derivatives] == [4]
    lines = render_lines(list(infos.values()))
    text = next(iter(lines.values()))
    # (one less than the yaml line: the `#endif` after the directive takes the first number)
    assert f"#define {line_macro('ForeachSinBackward0', 0)} 2" in text
    assert f"#define {line_macro('ForeachSinBackward0', 'fw0')} 3" in text
    assert '#define AGF_YAML_ForeachSinBackward0 "derivatives.yaml"' in text
    # and the derived Function's formula is under that macro's directive
    from autograd_scons.codegen.emit.options import EmitOptions
    unit = next(u for u in units if u.name == "ForeachSinBackward0")
    rendered = "\n".join(unit.render(EmitOptions()).values())
    assert f"#line {line_macro('ForeachSinBackward0', 0)} AGF_YAML_ForeachSinBackward0" in rendered
