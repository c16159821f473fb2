"""`stable=`, the stable target's one switch (codegen/model/stable.py): the
oldest torch it names, the define it sets, and its place in the request
(so in load()'s spec and the cache keys)."""

import pytest

from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.base.errors import OptionError
from autograd_scons.codegen.model.stable_target import StableTarget


@pytest.mark.parametrize("given, version, define", [
    (True, "2.10", "0x020a000000000000"),
    ("2.10", "2.10", "0x020a000000000000"),
    ("2.13", "2.13", "0x020d000000000000"),
    ((2, 9), "2.9", "0x0209000000000000"),
    ("yes", "2.10", "0x020a000000000000"),
])
def test_the_switch_names_the_oldest_torch_and_sets_its_define(given, version, define):
    target = StableTarget.parse(given)
    assert (target.version, target.define) == (version, define)
    assert target.cpp_defines() == [("TORCH_TARGET_VERSION", define), "TORCH_STABLE_ONLY"]


@pytest.mark.parametrize("given", [None, False, "", "0", "off"])
def test_off_is_the_cpp_target(given):
    assert StableTarget.parse(given) is None
    assert FunctionsRequest.of("nf.yaml", "d.yaml", stable=given).stable is None


@pytest.mark.parametrize("given, says", [("2.8", "starts at torch 2.9"), ("two", "not 'two'"),
                                         (3.1, "not 3.1"), ("2.10.1", "not '2.10.1'")])
def test_a_bad_value_is_one_line_naming_it(given, says):
    with pytest.raises(OptionError, match=says.replace(".", r"\.")):
        FunctionsRequest.of("nf.yaml", "d.yaml", stable=given)


def test_the_target_travels_in_the_request_and_changes_it():
    plain = FunctionsRequest.of("nf.yaml", "d.yaml")
    stable = FunctionsRequest.of("nf.yaml", "d.yaml", stable="2.11")
    assert stable.to_json()["stable"] == "2.11" and plain.to_json()["stable"] is None
    assert FunctionsRequest.from_json(stable.to_json()) == stable
    # (load()'s build folder and stamps are keyed by the request's JSON: the targets differ there)
    assert stable.to_json() != FunctionsRequest.of("nf.yaml", "d.yaml", stable="2.10").to_json()
