"""A compiler error inside a formula names derivatives.yaml and the
formula's line (codegen/emit/lines.py's #line directives), with GCC and,
where installed, clang; and the lines never reach a Function's own text."""

import os
import shutil
import subprocess
import sys

import pytest

from support.spec_facts import REPO

NATIVE = "- func: nbx::mm2(Tensor a, Tensor b) -> Tensor\n- func: nbx::neg2(Tensor self) -> Tensor\n"
DERIVATIVES = """\
- name: neg2(Tensor self) -> Tensor
  self: -grad

- name: mm2(Tensor a, Tensor b) -> Tensor
  a: grad * bb(b)
  b: grad * a
"""


def generate(tmp_path, derivatives=DERIVATIVES):
    (tmp_path / "nf.yaml").write_text(NATIVE)
    (tmp_path / "d.yaml").write_text(derivatives)
    r = subprocess.run([sys.executable, "-m", "autograd_scons", "generate", "-q", "--native-functions",
                        str(tmp_path / "nf.yaml"), "--derivatives", str(tmp_path / "d.yaml"), "--out",
                        str(tmp_path / "gen"), "--namespace", "nbx::autograd", "--unity", "1"],
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return tmp_path / "gen"


def test_lines_are_in_the_shared_header_not_in_the_function(tmp_path):
    gen = generate(tmp_path)
    lines = (gen / "derivative_lines.h").read_text()
    # (one less than the formula's line: the `#endif` after the directive takes that number)
    assert "#define AGF_LINE_Mm2Backward0_0 4\n" in lines and "#define AGF_LINE_Mm2Backward0_1 5\n" in lines
    assert '#define AGF_YAML_Mm2Backward0 "d.yaml"' in lines   # its name: the same text in any folder
    (tmp_path / "x").mkdir()
    moved = generate(tmp_path / "x", "\n\n" + DERIVATIVES)
    assert (moved / "functions" / "Mm2Backward0.cpp").read_bytes() == \
        (gen / "functions" / "Mm2Backward0.cpp").read_bytes()   # two entries lower: same text
    assert "#define AGF_LINE_Mm2Backward0_0 6\n" in (moved / "derivative_lines.h").read_text()


def compiler(cxx):
    if shutil.which(cxx) is None:
        pytest.skip(f"{cxx} is not installed: `apt-get install {'clang' if 'clang' in cxx else 'g++'}` "
                    "(.ci/run installs clang)")
    return cxx


@pytest.mark.compile
@pytest.mark.parametrize("cxx", ["g++", "clang++"])
def test_error_in_a_formula_names_the_yaml_line(tmp_path, cxx):
    from support import cxx as flags
    compiler(cxx)
    gen = generate(tmp_path)
    proc = subprocess.run([cxx, *flags.torch_flags(), *flags.python_flags(), "-w", "-fsyntax-only",
                           "unity/bucket_0.cpp"], capture_output=True, text=True, cwd=gen)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors and errors[0].startswith("d.yaml:5:"), proc.stderr[-3000:]
    assert "bb" in errors[0], errors[0]


@pytest.mark.compile
@pytest.mark.parametrize("cxx", ["g++", "clang++"])
def test_error_in_a_forward_formula_names_the_yaml_line(tmp_path, cxx):
    """Forward formulas are in the op's Autograd kernel (ops/), not the Function."""
    from support import cxx as flags
    compiler(cxx)
    gen = generate(tmp_path, DERIVATIVES.replace("  a: grad * bb(b)\n", "  a: grad * b\n")
                   + "  result: a_t * bb(b_p) + b_t * a_p\n")
    assert "#define AGF_LINE_Mm2Backward0_fw0 6\n" in (gen / "derivative_lines.h").read_text()
    proc = subprocess.run([cxx, *flags.torch_flags(), *flags.python_flags(), "-w", "-fsyntax-only",
                           "ops/nbx_mm2.cpp"], capture_output=True, text=True, cwd=gen)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors and errors[0].startswith("d.yaml:7:"), proc.stderr[-3000:]
    assert "bb" in errors[0], errors[0]
