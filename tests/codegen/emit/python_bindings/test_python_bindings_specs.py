"""The Python bindings we generate against torchgen's own (fast tier, no
compiler, except the one syntax check marked `compile`).

torch's specs: the set of classes bound and, for every one, its property
names in order must equal those of torchgen 2.13's `python_functions_*.cpp`,
generated in this run (tests/support/python_reference.py).  The example's specs
(which torchgen cannot read: its in-place op returns `()`): every
Function's properties must be what torchgen's own `process_function` writes
for its saved values.
"""

import os
import subprocess
import sys

import pytest

from support import cxx
from support import python_reference as ref
from autograd_scons.codegen.engine import incremental
from autograd_scons.codegen.emit.python_bindings import binding_units
from autograd_scons.codegen.emit.options import EmitOptions, parse_python
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.codegen.engine.units import Kind, load_units
from support.scons_helpers import FAKE_CXX, clone, scons
from support.spec_facts import REPO


def our_tables(units, opts=EmitOptions()):
    files = binding_units.render_bindings([u.subject for u in units if u.kind is Kind.FUNCTION and u.bound], opts)
    return ref.property_tables(t for rel, t in files.items() if rel.endswith(".cpp")), files


@pytest.fixture(scope="module")
def torch_units(torch_specs):
    nf, tags, d = torch_specs
    return load_units(nf, d, tags, kernels=False)


@pytest.mark.compile
def test_torch_specs_bind_what_torchgen_binds(torch_units, torch_counts):
    theirs, _ = ref.torchgen_python()
    ours, _ = our_tables(torch_units)
    # torch's build binds no derived foreach Function (torch._C._functions has none of them)
    assert len(theirs) == torch_counts.functions - torch_counts.foreach_derived
    assert set(ours) == set(theirs)
    differ = {op: (ours[op], theirs[op]) for op in theirs if ours[op] != theirs[op]}
    assert not differ, f"{len(differ)} of {len(theirs)} differ, e.g. {next(iter(differ.items()))}"


def test_derived_foreach_functions_have_no_python_type_in_torch(torch_units):
    import torch
    derived = [u.name for u in torch_units if not u.bound]
    assert derived and not [n for n in derived if hasattr(torch._C._functions, n)]
    assert all(hasattr(torch._C._functions, u.name) for u in torch_units if u.bound)


@pytest.mark.compile
def test_torchgen_process_function_on_our_infos_gives_its_own_tables(torch_units):
    # The reference the example is held to (below) reproduces torchgen's 649 tables.
    theirs, _ = ref.torchgen_python()
    for u in torch_units:
        if u.bound:
            assert ref.torchgen_properties(u.subject.all_saved_inputs, u.subject.all_saved_outputs) == \
                theirs[u.name], u.name


def test_example_functions_get_what_torchgen_gives_for_their_saved_values(example_ops):
    units = load_units(os.path.join(REPO, "specs", "native_functions.yaml"),
                       os.path.join(REPO, "specs", "derivatives.yaml"), kernels=False)
    ours, _ = our_tables(units)
    assert sorted(ours) == list(example_ops.functions)
    for u in units:
        assert ours[u.name] == ref.torchgen_properties(u.subject.all_saved_inputs, u.subject.all_saved_outputs), \
            u.name


def test_python_false_generates_no_bindings_and_prunes_them(tmp_path):
    tiny = os.path.join(REPO, "tests", "fixtures", "tiny_ext")
    specs = [os.path.join(tiny, "native_functions.yaml"), os.path.join(tiny, "derivatives.yaml")]
    out = str(tmp_path / "gen")

    def update(python):
        r = incremental.update(out, FunctionsRequest(*specs, emit=EmitOptions(kernels=False, python=python)))
        return [s for s in r.sources if s.startswith("python/")], sorted(os.listdir(out + "/python"))
    assert update(True) == (["python/bindings_0.cpp"], ["bindings.h", "bindings_0.cpp"])
    assert update(False) == ([], [])
    assert update(True)[0] == ["python/bindings_0.cpp"]


@pytest.mark.parametrize("value", ["maybe", "2", "", None, 1.5])
def test_bad_python_values_are_refused(value):
    with pytest.raises(ValueError, match="python must be a boolean"):
        parse_python(value)
    with pytest.raises(ValueError, match="python must be True or False"):
        EmitOptions(python=value)


@pytest.mark.parametrize("value, want", [(True, True), ("0", False), ("off", False), ("Yes", True), (0, False)])
def test_python_values_from_a_command_line(value, want):
    assert parse_python(value) is want


def test_bad_python_variable_is_one_line(tmp_path):
    root = clone(tmp_path / "repo")
    proc = scons(root, "-j2", f"CXX={FAKE_CXX}", "EXAMPLE=tests/fixtures/tiny_ext", "PYTHON=maybe", check=False)
    lines = [x for x in proc.stderr.splitlines() if x.startswith("scons: ***")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert lines == ["scons: *** PYTHON=maybe: python must be a boolean (True/False, 1/0), not 'maybe'"]
    assert not os.path.exists(os.path.join(root, "build", "example", "gen"))


@pytest.mark.compile
def test_one_binding_tu_of_torch_specs_compiles(torch_specs, tmp_path):
    nf, tags, d = torch_specs
    out = tmp_path / "gen"
    r = subprocess.run([sys.executable, "-m", "autograd_scons", "generate", "--native-functions", nf, "--tags", tags,
                        "--derivatives", d, "--out", str(out), "-q",
                        "--include", "torch/csrc/autograd/FunctionsManual.h"],
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    shard = binding_units.shard_file(0)
    res = cxx.run([cxx.CXX, "-fsyntax-only", "-w", *cxx.torch_flags(), *cxx.python_flags(), f"-I{out}",
                   str(out / shard)])
    assert res.returncode == 0, str(res)
