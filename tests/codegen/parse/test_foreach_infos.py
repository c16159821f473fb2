"""The out-of-place foreach infos we derive equal those libtorch's build
derives (torchgen's match_differentiability_info), in the same order."""

import pytest

from autograd_scons.codegen.parse.foreach import derive_foreach_infos
from autograd_scons.codegen.parse.load_derivatives import infos_from_specs, load_specs
from support.torchgen_reference import real_torchgen

pytestmark = pytest.mark.slow  # torchgen's load_derivatives on torch's specs: ~8 s


def _theirs():
    """The infos torchgen's match_differentiability_info appends."""
    infos, loaded = real_torchgen()
    return [per_key["Default"] for per_key in list(infos.values())[loaded:]]


def _saved(attrs, theirs=False):
    if theirs:
        return sorted((a.nctype.name, a.nctype.type.cpp_type(), a.expr) for a in attrs)
    return sorted((a.name, a.type.cpp_type(), a.expr) for a in attrs)


@pytest.mark.compile
def test_derived_foreach_infos_match_torchgen(torch_specs, torch_counts):
    nf, tags, d = torch_specs
    specs = load_specs(nf, d, tags)
    ours = derive_foreach_infos(infos_from_specs(specs), specs.native)
    theirs = _theirs()
    assert len(ours) == len(theirs) == torch_counts.foreach_derived
    for a, b in zip(ours, theirs):
        assert (a.op, a.name, str(a.func.func)) == (b.op, b.name, str(b.func.func))
        assert [(x.name, x.type) for x in a.args_with_derivatives] == \
            [(x.name, x.type) for x in b.args_with_derivatives], a.op
        assert [(x.formula, x.original_formula, x.var_names) for x in a.derivatives] == \
            [(x.formula, x.original_formula, tuple(x.var_names)) for x in b.derivatives], a.op
        for x, y in zip(a.derivatives, b.derivatives):
            assert [(s.name, s.type.cpp_type(), s.expr) for s in x.saved_inputs] == \
                [(s.nctype.name, s.nctype.type.cpp_type(), s.expr) for s in y.saved_inputs], a.op
        # torchgen's all_saved_* come from a set: compare as sets
        assert _saved(a.all_saved_inputs) == _saved(b.all_saved_inputs, True), a.op
        assert _saved(a.all_saved_outputs) == _saved(b.all_saved_outputs, True), a.op
        # (required inputs' order is hash-seed dependent in torchgen)
        assert [(f.formula, f.var_names, tuple(map(str, f.var_types)), sorted(f.required_inputs_fw_grad),
                 sorted(f.required_inputs_primal)) for f in a.forward_derivatives] == \
            [(f.formula, tuple(f.var_names), tuple(map(str, f.var_types)), sorted(f.required_inputs_fw_grad or ()),
              sorted(f.required_inputs_primal or ())) for f in b.forward_derivatives], a.op


@pytest.mark.compile
def test_derivation_is_deterministic(torch_specs):
    nf, tags, d = torch_specs
    specs = load_specs(nf, d, tags)
    infos = infos_from_specs(specs)
    first = derive_foreach_infos(infos, specs.native)
    again = derive_foreach_infos(infos, specs.native)
    assert [(i.op, i.all_saved_inputs, i.all_saved_outputs) for i in first] == \
        [(i.op, i.all_saved_inputs, i.all_saved_outputs) for i in again]
    # saved in first-use order (derivatives are in key order: other, self)
    add = next(i for i in first if i.op == "ForeachAddBackward0List")
    assert [s.name for s in add.all_saved_inputs] == ["other", "alpha", "self"]
