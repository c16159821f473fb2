"""The torch span's reader (ship/torch_span.py: the backend checks the build
environment's torch against build-system.requires without `packaging`)
against packaging's SpecifierSet, the span a merged wheel requires, and
the manylinux tag taken from auditwheel's report (ship/platform_tag.py;
the real auditwheel on real libraries: tests/cuda/test_merge_cuda.py)."""

import itertools

import pytest
from packaging.specifiers import SpecifierSet

from autograd_scons.ship import platform_tag, torch_span

SPECS = [">=2.13,<2.15", "==2.13.*", ">=2.12,<2.16,!=2.14.*", ">2.13.0,<=2.14.1", "!=2.13.*", "==2.14.1", ">=2.13"]
VERSIONS = ["2.12.9", "2.13.0", "2.13.0+cpu", "2.13.2", "2.14.0", "2.14.1+cu130", "2.14.2", "2.15.0", "3.0.0", "2.13"]


@pytest.mark.parametrize("spec", SPECS)
def test_contains_agrees_with_packaging(spec):
    got = [v for v in VERSIONS if torch_span.contains(spec, v)]
    assert got == [v for v in VERSIONS if SpecifierSet(spec).contains(v)]


def test_an_unreadable_clause_is_one_line():
    for spec in ("~=2.13", ">=2.13.*", "2.13", "", ">=2.x"):
        with pytest.raises(torch_span.BadSpan) as e:
            torch_span.contains(spec, "2.13.0")
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("carried", [[13], [13, 14], [13, 15], [12, 13, 16], [10, 14, 15]])
def test_requires_for_takes_exactly_the_carried_minors(carried):
    spec = SpecifierSet(torch_span.requires_for([(2, m) for m in carried]))
    for m, patch in itertools.product(range(8, 20), ("0", "1+cu130", "0+cpu")):
        assert spec.contains(f"2.{m}.{patch}") == (m in carried), (spec, m)
    assert not spec.contains("3.0.0") and not spec.contains("1.13.0")


def test_requires_for_two_torch_majors_is_one_line():
    with pytest.raises(torch_span.BadSpan) as e:
        torch_span.requires_for([(1, 13), (2, 0)])
    assert "one torch major" in str(e.value)


def test_default_span_is_the_installed_minor_and_the_next():
    import torch
    spec = SpecifierSet(torch_span.default_span(torch.__version__))
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    assert [m for m in range(minor - 2, minor + 4) if spec.contains(f"{major}.{m}.0")] == [minor, minor + 1]


# auditwheel's `show --json` fields that platform_tag reads
def _report(external, sym="manylinux_2_34_x86_64", **flags):
    return {"sym_tag": sym, "overall_tag": "linux_x86_64", "external_libs": {n: None for n in external},
            "policy_upgrades": {sym: {"libs_to_eliminate": sorted(external)}}, **flags}


def test_the_tag_is_the_symbol_versions_when_only_torchs_libraries_are_external():
    torch_libs = ["libc10.so", "libc10_cuda.so", "libcudart.so.13", "libtorch_cpu.so", "libtorch_python.so"]
    assert platform_tag.manylinux_tag(_report(torch_libs)) == "manylinux_2_34_x86_64"
    assert platform_tag.manylinux_tag(_report([], sym="manylinux_2_28_x86_64")) == "manylinux_2_28_x86_64"


def test_another_external_library_or_no_manylinux_symbols_is_one_line():
    for report, words in ((_report(["libtorch_cpu.so", "libfoo.so.1"]), "libfoo.so.1"),
                          (_report([], sym="linux_x86_64"), "manylinux container"),
                          (_report([], ucs2=True), "ucs2")):
        with pytest.raises(platform_tag.TagError) as e:
            platform_tag.manylinux_tag(report)
        assert words in str(e.value) and "\n" not in str(e.value)
