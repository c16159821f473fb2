"""Bad input gets one clear line naming file, line and entry, and exit 1."""

import subprocess
import sys
import textwrap

import pytest

from autograd_scons.__main__ import main

NATIVE = """\
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method

- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
  variants: method

- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)

- func: sin(Tensor self) -> Tensor
"""

GOOD = """\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
  result: other_t * self_p + self_t * other_p

- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), keepdim)
  values: gather_with_keepdimed_indices(self_t, dim, indices, keepdim)

- name: sin(Tensor self) -> Tensor
  self: grad * self.cos().conj()
  result: auto_element_wise
"""


def run(tmp_path, capsys, derivatives, native=NATIVE):
    (tmp_path / "nf.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(textwrap.dedent(derivatives))
    rc = main(["infos", "--native-functions", str(tmp_path / "nf.yaml"),
               "--derivatives", str(tmp_path / "d.yaml")])
    out, err = capsys.readouterr()
    return rc, out, err


def test_good_input_loads(tmp_path, capsys):
    rc, out, err = run(tmp_path, capsys, GOOD)
    assert rc == 0 and err == ""
    assert '"op": "MulBackward0"' in out and '"op": "MaxBackward0"' in out


def replace_line(text, old, new):
    assert old in text
    return text.replace(old, new)


CASES = {
    "malformed yaml": (GOOD.replace("  other: mul_tensor", "  other mul_tensor: [x"),
                       "d.yaml:4:", "malformed YAML"),
    "no such schema": (GOOD.replace("mul.Tensor(Tensor self, Tensor other)", "mul.Tensor(Tensor self, Tensor othr)"),
                       "d.yaml:1: entry 'mul.Tensor(Tensor self, Tensor othr) -> Tensor':",
                       "no native function has exactly this schema"),
    "unknown key": (GOOD.replace("  other: mul_tensor", "  othr: mul_tensor"),
                    "d.yaml:3: entry 'mul.Tensor", "'othr' is neither an argument nor an output"),
    "unknown second name": (GOOD.replace("  other: mul_tensor", "  self, othr: mul_tensor").replace(
                            "  self: mul_tensor_backward(grad, other, self.scalar_type())\n", ""),
                            "d.yaml:2: entry 'mul.Tensor", "'othr' is not an argument"),
    "two formulas for one argument": (GOOD.replace("  other: mul_tensor", "  self, other: mul_tensor"),
                                      "d.yaml:3: entry 'mul.Tensor", "two formulas for argument 'self'"),
    "output_differentiability length": (
        GOOD.replace("  values: gather", "  output_differentiability: [True]\n  values: gather"),
        "d.yaml:8: entry 'max.dim", "'output_differentiability' has 1 items but the function has 2 outputs"),
    "grads index past outputs": (GOOD.replace("grad * self.cos().conj()", "grads[1] * self.cos().conj()"),
                                 "d.yaml:11: entry 'sin(Tensor self) -> Tensor'",
                                 "uses grads[1] but the function has only 1 outputs"),
    "duplicate entry": (GOOD + "\n- name: sin(Tensor self) -> Tensor\n  self: grad\n",
                        "d.yaml:14: entry 'sin(Tensor self) -> Tensor'", "duplicate entry: line 10"),
    "duplicate key": (GOOD.replace("  result: auto_element_wise", "  self: grad\n  result: auto_element_wise"),
                      "d.yaml:12:", "duplicate key 'self'"),
    "unparsable name": (GOOD.replace("- name: sin(Tensor self) -> Tensor", "- name: sin Tensor self"),
                        "d.yaml:10: entry 'sin Tensor self'", "'name:' is not a schema"),
    "formula not a string": (GOOD.replace("  result: auto_element_wise", "  result: [1, 2]"),
                             "d.yaml:12: entry 'sin", "must be a string"),
    "sizes instead of sym_sizes": (GOOD.replace("self.sym_sizes()", "self.sizes()"),
                                   "d.yaml:7: entry 'max.dim", ".sym_sizes()"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_derivatives(tmp_path, capsys, case):
    text, where, what = CASES[case]
    rc, out, err = run(tmp_path, capsys, text)
    assert rc == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and str(tmp_path / where) in lines[0], err
    assert what in lines[0], err


def test_bad_native_schema(tmp_path, capsys):
    native = NATIVE.replace("- func: sin(Tensor self) -> Tensor", "- func: sin(Tensor self) -> Tensr")
    rc, out, err = run(tmp_path, capsys, GOOD, native)
    assert rc == 1
    assert f"{tmp_path / 'nf.yaml'}:9: entry 'sin(Tensor self) -> Tensr': bad schema: unknown type 'Tensr'" in err


def test_cli_error_has_no_traceback(tmp_path):
    (tmp_path / "nf.yaml").write_text(NATIVE)
    (tmp_path / "d.yaml").write_text("- name: [unclosed\n")
    p = subprocess.run([sys.executable, "-m", "autograd_scons", "infos", "--native-functions", str(tmp_path / "nf.yaml"),
                        "--derivatives", str(tmp_path / "d.yaml")], capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == ""
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "d.yaml:2:" in p.stderr or "d.yaml:1:" in p.stderr


def test_missing_file(tmp_path, capsys):
    rc = main(["infos", "--native-functions", str(tmp_path / "nope.yaml"), "--derivatives", str(tmp_path / "d.yaml")])
    assert rc == 1
    assert "nope.yaml: cannot read file" in capsys.readouterr().err


def test_bad_input_on_a_first_generate_leaves_no_folder(tmp_path, capsys):
    (tmp_path / "nf.yaml").write_text(NATIVE)
    (tmp_path / "d.yaml").write_text("- name: [unclosed\n")
    out = tmp_path / "deep" / "gen"
    rc = main(["generate", "--native-functions", str(tmp_path / "nf.yaml"), "--derivatives",
               str(tmp_path / "d.yaml"), "--out", str(out)])
    assert rc == 1 and "d.yaml:" in capsys.readouterr().err
    assert not out.exists()
    out.mkdir(parents=True)   # a folder that was there stays
    assert main(["generate", "--native-functions", str(tmp_path / "nf.yaml"), "--derivatives",
                 str(tmp_path / "d.yaml"), "--out", str(out)]) == 1
    assert out.is_dir()
