"""Without namespace=, the classes' namespace derives from the specs' op
namespace (`<ns>::autograd`), is part of every key, and is refused where it
would be ambiguous: no generation, one located line.  (The real-compiler
consequences, two extensions in one process, are tests/jit/test_namespaces.py.)"""

import os
import shutil

import pytest

from autograd_scons.codegen.engine import incremental
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from support.scenarios import TINY


@pytest.fixture
def specs(tmp_path):
    for name in ("native_functions.yaml", "derivatives.yaml"):
        shutil.copy(os.path.join(TINY, name), tmp_path / name)
    return tmp_path


def update(specs, namespace=None, kernels=False):
    return incremental.update(str(specs / "gen"), FunctionsRequest(
        str(specs / "native_functions.yaml"), str(specs / "derivatives.yaml"), None,
        EmitOptions(namespace=namespace, kernels=kernels)))


def header(specs, op="MulBackward0"):
    return (specs / "gen" / "functions" / f"{op}.h").read_text()


def rename_namespace(specs, new):
    nf = specs / "native_functions.yaml"
    nf.write_text(nf.read_text().replace("myops::", f"{new}::"))


@pytest.mark.parametrize("kernels", [False, True])
def test_default_is_the_op_namespace(specs, kernels):
    update(specs, kernels=kernels)
    assert "namespace myops::autograd {" in header(specs)
    assert "namespace myops::autograd {" in (specs / "gen" / "prelude.h").read_text()


def test_the_default_is_keyed_a_change_of_op_namespace_regenerates(specs):
    first = update(specs)
    assert not update(specs).parsed  # the default resolves to the same: fast path
    rename_namespace(specs, "other")
    r = update(specs)
    assert sorted(r.regenerated) == sorted(first.units)
    assert "namespace other::autograd {" in header(specs)
    assert all(r.keys[u] != first.keys[u] for u in first.units)


def test_an_explicit_namespace_wins(specs):
    update(specs, "mine::grads")
    assert "namespace mine::grads {" in header(specs)
    r = update(specs)  # back to the default: every key changes
    assert sorted(r.regenerated) == sorted(r.units)
    assert "namespace myops::autograd {" in header(specs)


def test_aten_only_specs_keep_the_aten_default(specs):
    nf, d = specs / "native_functions.yaml", specs / "derivatives.yaml"
    nf.write_text("- func: mul(Tensor self, Tensor other) -> Tensor\n")
    d.write_text("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad * other\n  other: grad * self\n")
    update(specs)
    assert "namespace autograd_ext::generated {" in header(specs)


def test_ops_in_two_namespaces_need_an_explicit_one(specs):
    nf = specs / "native_functions.yaml"
    lines = nf.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("- func: myops::scale"))
    lines[at] = lines[at].replace("myops::", "yours::")
    nf.write_text("".join(lines))
    with pytest.raises(SpecError) as e:
        update(specs)
    assert str(e.value).startswith(f"{nf}:{at + 1}: entry 'yours::scale(")
    assert "ops in two namespaces ('myops' at line " in str(e.value)
    assert "give namespace=" in str(e.value) and "\n" not in str(e.value)
    assert not (specs / "gen").exists()
    update(specs, "both::autograd")  # an explicit namespace is fine
    assert "namespace both::autograd {" in header(specs)
