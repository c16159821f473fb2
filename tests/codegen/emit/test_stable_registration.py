"""The stable target's C++ from native_functions.yaml (emit/stable_registration.py):
each kernel declared in `<ns>::native` in stable types, one STABLE_TORCH_LIBRARY
with the schemas, a TORCH_BOX binding per dispatch key, no Autograd kernel; and
what has no stable form refused at its yaml line."""

import os

import pytest

from autograd_scons.codegen.emit.stable_registration import render_kernels_header, render_registration
from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.parse.extension_ops import kernel_units
from autograd_scons.codegen.parse.native_functions import load_tags, parse_native_functions

from support.spec_facts import REPO

STABLE_EXT = os.path.join(REPO, "tests", "fixtures", "stable_ext", "native_functions.yaml")


def units_of(text, path="nf.yaml"):
    return kernel_units(parse_native_functions(path, text, load_tags(None)), (), formulas=False)


def example_units():
    with open(STABLE_EXT) as f:
        return units_of(f.read(), STABLE_EXT)


def test_each_kernel_is_declared_in_its_stable_types():
    header = render_kernels_header(example_units(), "native_functions.yaml")
    for line in ["torch::stable::Tensor mul_cpu(const torch::stable::Tensor& self, const torch::stable::Tensor& other);",
                 "torch::stable::Tensor scale_cpu(const torch::stable::Tensor& self, double alpha);",
                 "torch::stable::Tensor shifted_cpu(const torch::stable::Tensor& self, "
                 "std::optional<torch::stable::Tensor> shift);",
                 "torch::stable::Tensor sumsq_cpu(const torch::stable::Tensor& self);"]:
        assert line in header.splitlines()
    assert header.count("namespace stableops::native {") == 4 and "at::" not in header


def test_the_registration_is_stable_and_has_no_autograd_kernel():
    text = render_registration(example_units(), "native_functions.yaml", "autograd.py")
    lines = [x.strip() for x in text.splitlines()]
    assert "STABLE_TORCH_LIBRARY(stableops, m) {" in lines
    assert 'm.def("shifted(Tensor self, Tensor? shift) -> Tensor");' in lines
    assert "STABLE_TORCH_LIBRARY_IMPL(stableops, CPU, m) {" in lines
    assert 'm.impl("scale", TORCH_BOX(&stableops::native::scale_cpu));' in lines
    assert "Autograd" not in text and "torch/library.h" not in text and "ATen" not in text
    assert [x for x in lines if x.startswith("#include")] == ["#include <torch/csrc/stable/library.h>",
                                                              '#include "kernels.h"']


def test_other_types_map_to_what_torch_box_converts():
    units = units_of("- func: s::f(Tensor[] xs, int n, SymInt m, bool b, int[] dims, ScalarType? t, str s) "
                     "-> (Tensor, Tensor)\n  dispatch:\n    CPU: f_cpu\n")
    assert ("std::tuple<torch::stable::Tensor, torch::stable::Tensor> f_cpu(std::vector<torch::stable::Tensor> xs, "
            "int64_t n, int64_t m, bool b, std::vector<int64_t> dims, std::optional<torch::headeronly::ScalarType> t, "
            "std::string s);") in render_kernels_header(units, "nf.yaml")


@pytest.mark.parametrize("entry, says", [
    ("- func: s::f(Tensor self, Scalar other) -> Tensor\n  dispatch:\n    CPU: f_cpu\n",
     "argument 'other': a Scalar has no stable conversion"),
    ("- func: s::f(Tensor(a!) self) -> Tensor(a!)\n  dispatch:\n    CPU: f_cpu\n",
     "argument 'self' is written"),
    ("- func: s::f(Tensor(a) self) -> Tensor(a)\n  dispatch:\n    CPU: f_cpu\n",
     "an aliased return"),
])
def test_what_has_no_stable_form_is_refused_at_its_line(entry, says):
    text = "# a comment\n\n" + entry
    with pytest.raises(SpecError) as e:
        render_registration(units_of(text), "nf.yaml", "autograd.py")
    assert str(e.value).startswith("nf.yaml:3: entry 's::f': ") and says in str(e.value)
    assert "\n" not in str(e.value)
