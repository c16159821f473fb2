"""The translator on an extension's own Python helpers (python_helpers=,
formula/user_helpers.py): calls of the functions the module defines, read
statically, and refusals naming the module (fast tier: no torch)."""

from __future__ import annotations

import pytest

from autograd_scons.base.errors import FormulaError, SpecError
from autograd_scons.codegen.formula import translate
from autograd_scons.codegen.formula.user_helpers import parse_helper_module, read_helper_module

SOURCE = '''import torch
from typing import List


def sum_to(grad, sizes) -> torch.Tensor:
    return grad.sum_to_size(sizes)


def blocks(n: int, block: int) -> int:
    return n // block


def sizes_of(x) -> List[int]:
    return list(x.shape)


def _private(x):
    return x
'''
OWN = parse_helper_module("pkg/myops_helpers.py", SOURCE)
INPUTS = {"self": "Tensor", "block": "int", "self_sym_sizes": "int[]"}


def tr(formula: str, own=OWN, **kw) -> str:
    return translate(formula, inputs=INPUTS, outputs={"result": "Tensor"}, helpers=kw.pop("helpers", ("sum_to",)),
                     helper_prefix="H.", own_helpers=own, own_prefix="O.", **kw)


def test_the_modules_top_level_functions_are_read_without_importing_it():
    assert OWN.types == {"sum_to": "Tensor", "blocks": "int", "sizes_of": "int[]", "_private": "Tensor"}


def test_qualified_and_unqualified_calls_reach_the_module():
    assert tr("myops::sum_to(grad, self.sym_sizes())") == "O.sum_to(grad, self.shape)"
    assert tr("sum_to(grad, self_sym_sizes)") == "O.sum_to(grad, self_sym_sizes)"   # the module's, not torch's
    assert tr("myops::detail::_private(grad)") == "O._private(grad)"
    # without the module, the unqualified name is FunctionsManual's
    assert tr("sum_to(grad, self_sym_sizes)", own=None) == "H.sum_to(grad, self_sym_sizes)"


def test_the_return_annotation_types_the_call():
    assert tr("grad / myops::blocks(self.sym_size(0), block)") == "grad / O.blocks(self.size(0), block)"
    assert tr("myops::blocks(self.sym_size(0), block) / 2") == "O.blocks(self.size(0), block) // 2"
    assert tr("myops::sizes_of(self).size()") == "len(O.sizes_of(self))"


def test_a_name_the_module_does_not_define_is_refused_naming_it():
    with pytest.raises(FormulaError, match=r"the call of 'myops::nothere' \('nothere' is not a function of the "
                                           r"helper module 'pkg/myops_helpers.py'\) \(column 1"):
        tr("myops::nothere(grad)")
    with pytest.raises(FormulaError, match=r"the call of 'nothere' \(not a function of the helper module "
                                           r"'pkg/myops_helpers.py', nor one of torch's helpers"):
        tr("grad * nothere(grad)")


def test_a_cpp_helper_without_a_module_is_refused_with_what_to_do():
    with pytest.raises(FormulaError, match=r"the call of 'myops::sum_to' \(a C\+\+ helper: .*python_helpers= "
                                           r"names, defining 'sum_to'\)"):
        tr("myops::sum_to(grad, self_sym_sizes)", own=None)


def test_library_namespaces_are_never_the_modules():
    with pytest.raises(FormulaError, match=r"the call of 'c10::sum_to'"):
        tr("c10::sum_to(grad, self_sym_sizes)")


def test_a_syntax_error_is_one_line_at_its_file_and_line(tmp_path):
    path = tmp_path / "bad_helpers.py"
    path.write_text("import torch\n\ndef f(x:\n    return x\n")
    with pytest.raises(SpecError) as e:
        read_helper_module(str(path))
    assert str(e.value).startswith(f"{path}:3: the formulas' Python helper module (python_helpers=) has a syntax "
                                   "error: ")
    assert "\n" not in str(e.value)


def test_a_relative_import_and_a_missing_file_are_refused(tmp_path):
    path = tmp_path / "rel.py"
    path.write_text("import torch\nfrom .other import g\n")
    with pytest.raises(SpecError, match=r"rel\.py:2: .*imports relatively \('from \.other import \.\.\.'\)"):
        read_helper_module(str(path))
    with pytest.raises(SpecError, match=r"missing\.py: cannot read the formulas' Python helper module"):
        read_helper_module(str(tmp_path / "missing.py"))
