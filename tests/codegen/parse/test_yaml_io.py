"""codegen.parse.yaml_io builds Python values from the composed nodes itself (faster
than PyYAML's constructor): what it yields must be what
yaml.load(..., CSafeLoader) yields, on torch's real spec files and on the
scalar kinds its shortcuts special-case."""

import pytest
import yaml

from autograd_scons.codegen.parse.yaml_io import load_entries, read_text
from support.spec_facts import torch_specs


def pyyaml(text):
    return yaml.load(text, Loader=yaml.CSafeLoader)


# (native_functions.yaml, the largest, in the full tier: the fast tier keeps the other two)
@pytest.mark.parametrize("which", [pytest.param(0, marks=pytest.mark.compile), 1, 2],
                         ids=["native_functions.yaml", "tags.yaml", "derivatives.yaml"])
def test_real_spec_file_loads_as_pyyaml_loads_it(which):
    path = torch_specs()[which]
    text = read_text(path)
    ours = [e.data for e in load_entries(path, text)]
    theirs = pyyaml(text)
    assert len(ours) == len(theirs) > 0
    # same values and same types (True is not "True", 1 is not "1")
    assert [repr(x) for x in ours] == [repr(x) for x in theirs]


SCALARS = """\
- s: plain
  q: "quoted: yes"
  b: [true, False, yes, no, on, off]
  n: [1, -2, 0x1f, 1.5, .inf, null, ~]
  nested: {a: [x, {b: y}], c: ''}
  multi: |
    line one
    line two
- base: {k: 1, j: two}
  merged: {<<: {k: 1, j: two}, j: three}
"""


def test_every_scalar_kind_loads_as_pyyaml_loads_it(tmp_path):
    ours = [e.data for e in load_entries(str(tmp_path / "x.yaml"), SCALARS)]
    assert repr(ours) == repr(pyyaml(SCALARS))
