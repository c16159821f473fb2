"""C++ types as values (codegen/model/cpp.py): their spellings agree with
torchgen's for every argument and return of the real native functions, and
what autograd asks of a type (a tensor? a list of them? a view?) is answered
by the type, whatever its constness or reference."""

import pytest
import yaml

from autograd_scons.codegen.model.cpp import (OPTIONAL_TENSOR, OPTIONAL_TENSOR_LIST, ArrayCType, ArrayRefCType, ConstRefCType,
                             ListCType, MutRefCType, OptionalCType, VectorCType, argument_type, boolT, doubleT,
                             intArrayRefT, iTensorListRefT, longT, return_type, scalarT, stringViewT, symIntT,
                             tensorListT, tensorT, _BY_VALUE)
from autograd_scons.codegen.model.schema import BASE_TYPES, FunctionSchema

from support.spec_facts import torch_specs


@pytest.mark.compile
def test_every_real_argument_and_return_is_spelled_like_torchgen():
    from torchgen import local
    from torchgen.api import cpp as tg_cpp
    from torchgen.model import FunctionSchema as TGSchema
    nf, _, _ = torch_specs()
    with open(nf) as f:
        funcs = [e["func"] for e in yaml.load(f, Loader=yaml.CSafeLoader)]
    bad, checked, expected = [], 0, 0
    for cref, ilistref in ((False, False), (True, True)):
        with local.parametrize(use_const_ref_for_mutable_tensors=cref, use_ilistref_for_tensor_lists=ilistref):
            for s in funcs:
                ours, ref = FunctionSchema.parse(s), TGSchema.parse(s)
                args, ref_args = list(ours.schema_order_arguments()), list(ref.schema_order_arguments())
                # every argument and return torchgen sees is checked: none skipped, none cut off by zip
                expected += len(ref_args) + len(ref.returns)
                if (len(args), len(ours.returns)) != (len(ref_args), len(ref.returns)):
                    bad.append(f"{s}: not as many arguments and returns as torchgen reads")
                for a, r in zip(args, ref_args):
                    try:
                        mine = argument_type(a.type, mutable=a.is_write, const_ref_for_mutable=cref,
                                             ilistref=ilistref)
                    except ValueError as e:
                        bad.append(f"{s}: {a}: no C++ type: {e}")
                        continue
                    theirs = tg_cpp.argumenttype_type(r.type, mutable=r.is_write, binds="x", symint=True)
                    pairs = [(mine.cpp_type(), theirs.cpp_type()),
                             (mine.remove_const_ref().cpp_type(), theirs.remove_const_ref().cpp_type())]
                    bad += [f"{s}: {a}: {m} != {t}" for m, t in pairs if m != t]
                    checked += 1
                for a, r in zip(ours.returns, ref.returns):
                    mine = return_type(a, const_ref_for_mutable=cref).cpp_type()
                    theirs = tg_cpp.return_type(r, symint=True).cpp_type()
                    bad += [f"{s}: return {a}: {mine} != {theirs}"] if mine != theirs else []
                    checked += 1
    assert bad == [], bad[:20]
    assert checked == expected > 0


def test_every_schema_base_type_has_a_cpp_type():
    assert set(_BY_VALUE) | {"Tensor", "Scalar"} == set(BASE_TYPES)


@pytest.mark.parametrize("t, spelling, value", [
    (ConstRefCType(tensorT), "const at::Tensor &", "at::Tensor"),
    (MutRefCType(tensorT), "at::Tensor &", "at::Tensor"),
    (ConstRefCType(OPTIONAL_TENSOR_LIST), "const c10::List<::std::optional<at::Tensor>> &",
     "c10::List<::std::optional<at::Tensor>>"),
    (OptionalCType(ConstRefCType(scalarT)), "::std::optional<const at::Scalar &>", "::std::optional<at::Scalar>"),
    (VectorCType(VectorCType(longT)), "::std::vector<::std::vector<int64_t>>",
     "::std::vector<::std::vector<int64_t>>"),
    (ArrayRefCType(doubleT), "at::ArrayRef<double>", "at::ArrayRef<double>"),
    (ArrayCType(boolT, 3), "::std::array<bool,3>", "::std::array<bool,3>"),
])
def test_spelling_and_value_type(t, spelling, value):
    assert t.cpp_type() == str(t) == spelling
    assert t.remove_const_ref().cpp_type() == value


def test_classification_ignores_const_and_reference():
    assert ConstRefCType(OPTIONAL_TENSOR).is_tensor and MutRefCType(tensorT).is_tensor
    assert not scalarT.is_tensor and not tensorListT.is_tensor
    lists = [tensorListT, ConstRefCType(iTensorListRefT), VectorCType(tensorT), ConstRefCType(OPTIONAL_TENSOR_LIST)]
    assert all(t.is_tensor_list for t in lists)
    assert [t.is_optional_tensor_list for t in lists] == [False, False, False, True]
    assert not VectorCType(OPTIONAL_TENSOR).is_tensor_list and not ListCType(tensorT).is_tensor_list


def test_views_are_types_that_may_dangle():
    views = [intArrayRefT, stringViewT, ArrayRefCType(doubleT), ConstRefCType(tensorT),
             OptionalCType(stringViewT), VectorCType(intArrayRefT)]
    owned = [tensorT, symIntT, OptionalCType(doubleT), VectorCType(VectorCType(longT)), ListCType(OPTIONAL_TENSOR),
             ArrayCType(boolT, 2)]
    assert all(t.is_view for t in views) and not any(t.is_view for t in owned)


def test_a_saved_view_is_stored_as_its_owning_type_or_refused():
    from autograd_scons.codegen.model.autograd import SavedAttribute
    from autograd_scons.codegen.emit.functions.saved import PLAIN, saved_slot
    from autograd_scons.base.errors import FormulaError
    slot = saved_slot(SavedAttribute("dim", intArrayRefT, "dim"), False)
    assert (slot.kind, slot.member_type) == (PLAIN, "std::vector<int64_t>")
    with pytest.raises(FormulaError, match="non-owning"):
        saved_slot(SavedAttribute("weights", ArrayRefCType(doubleT), "weights"), False)
