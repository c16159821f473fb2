"""The schema parser reads every `func:` of the real native_functions.yaml;
its classification matches what matching needs."""

import pytest
import yaml

from autograd_scons.codegen.model.schema import FUNCTIONAL, INPLACE, MUTABLE, OUT, FunctionSchema, SchemaError

from support.spec_facts import torch_specs


def _real_funcs():
    nf, _, _ = torch_specs()
    with open(nf) as f:
        return [e["func"] for e in yaml.load(f, Loader=yaml.CSafeLoader)]


def test_every_real_schema_parses():
    # (parse accepts canonical text only, so what it accepts prints back unchanged)
    bad = []
    for s in _real_funcs():
        try:
            FunctionSchema.parse(s)
        except SchemaError as e:
            bad.append(f"{s}: {e}")
    assert bad == []


def test_signature_groups_variants_like_torchgen():
    from torchgen.model import FunctionSchema as TGSchema
    for s in _real_funcs():  # all of them (a second or two)
        ours, ref = FunctionSchema.parse(s), TGSchema.parse(s)
        assert ours.signature_key == str(ref.signature()), s
        assert ours.view_signature_key == str(ref.signature(strip_view_copy_name=True)), s
        assert ours.kind() == ref.kind().name, s


@pytest.mark.parametrize("schema, kind", [
    ("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", FUNCTIONAL),
    ("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", INPLACE),
    ("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", OUT),
    ("foo(Tensor self, Tensor(a!) buf) -> Tensor", MUTABLE),
])
def test_kinds(schema, kind):
    f = FunctionSchema.parse(schema)
    assert f.kind() == kind
    assert str(f) == schema


def test_parts():
    f = FunctionSchema.parse(
        "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor")
    assert f.name.base == "empty" and f.name.overload == "memory_format"
    assert f.arguments.tensor_options_index == 0
    assert [a.name for a in f.arguments.kwarg_only][-1] == "memory_format"
    g = FunctionSchema.parse("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
    assert [r.name for r in g.returns] == ["values", "indices"]
    h = FunctionSchema.parse("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]")
    assert h.arguments.positional[0].annotation.alias_set_after == ("*",)


@pytest.mark.parametrize("bad", [
    "foo(Tensor self) -> Tensr",             # unknown type
    "foo(Tensor self)",                        # no returns
    "foo(Tensor  self) -> Tensor",             # not canonical spacing
    "foo_(Tensor self) -> Tensor",             # in-place without mutable self
    "foo(Tensor self, *, *, int x) -> Tensor",
    "foo(Tensor self, Tensor self) -> Tensor",
    "foo.out(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)",
])
def test_bad_schemas_are_rejected(bad):
    with pytest.raises(SchemaError):
        FunctionSchema.parse(bad)
