"""The compile layout's rules, as pure functions (codegen/layout.py)."""

import pytest

from codegen.layout import (MAX_ALONE, Layout, bucket_count, bucket_of, cold, parse_unity, plan,
                            render_buckets, sources)
from codegen.units import Kind, Unit

NAMES = [f"Op{i}Backward0" for i in range(40)]


def in_bucket(layout, b):
    return {n for n in NAMES if layout.place(n) == b}


def test_bucket_count_rule():
    # At least one bucket per job when each gets MIN_PER_BUCKET units; big
    # specs are cut into buckets of at most MAX_PER_BUCKET whatever -j is.
    assert bucket_count(24, 2) == 2
    assert bucket_count(24, 1) == 1
    assert bucket_count(24, 64) == 3
    assert bucket_count(711, 2) == bucket_count(711, 8) == 12
    assert bucket_count(711, 64) == 64
    assert bucket_count(0, 4) == 1


def test_cold_layout_depends_on_its_arguments_only():
    assert cold(None, 40, 2) == cold(None, 40, 2) == Layout(None, 2, ())
    assert cold(5, 40, 2) == Layout(5, 5, ())
    assert cold(0, 40, 2).place("Op1Backward0") is None


def test_first_edit_goes_alone_and_its_bucket_changes_once():
    old = cold(None, len(NAMES), 4)
    edited = NAMES[3]
    new = plan(None, NAMES, 4, old, NAMES, [edited])
    assert new.alone == (edited,)
    b = bucket_of(edited, old.buckets)
    assert in_bucket(new, b) == in_bucket(old, b) - {edited}
    assert all(in_bucket(new, i) == in_bucket(old, i) for i in range(old.buckets) if i != b)
    # Edited again: the layout stays, so only its own TU changes.
    assert plan(None, NAMES, 4, new, NAMES, [edited]) == new


def test_alone_unit_goes_back_only_when_its_bucket_recompiles():
    old = cold(None, len(NAMES), 4)
    a = NAMES[0]
    b = next(n for n in NAMES[1:] if bucket_of(n, 4) == bucket_of(a, 4))
    other = next(n for n in NAMES if bucket_of(n, 4) != bucket_of(a, 4))
    lay = plan(None, NAMES, 4, old, NAMES, [a])
    assert plan(None, NAMES, 4, lay, NAMES, [other]).alone == tuple(sorted([a, other]))
    back = plan(None, NAMES, 4, lay, NAMES, [b])
    assert back.alone == (b,) and back.place(a) == bucket_of(a, 4)


def test_removal_and_addition():
    old = cold(None, len(NAMES), 4)
    gone = NAMES[5]
    new = plan(None, NAMES[:5] + NAMES[6:], 4, old, NAMES, [])
    assert new == old  # the bucket loses it (its TU text changes), nothing else moves
    added = plan(None, NAMES + ["NewBackward0"], 4, old, NAMES, ["NewBackward0"])
    assert added.alone == ("NewBackward0",)  # a new unit compiles alone: no bucket recompiles
    assert gone not in added.alone


def test_too_many_edits_stay_in_their_buckets():
    old = cold(None, len(NAMES), 4)
    assert plan(None, NAMES, 4, old, NAMES, NAMES[:4]).alone == tuple(sorted(NAMES[:4]))
    assert plan(None, NAMES, 4, old, NAMES, NAMES[:5]).alone == ()      # more than the jobs at once
    assert plan(None, NAMES, 2, old, NAMES, NAMES[:3]).alone == ()
    many = old
    for i in range(0, MAX_ALONE, 4):
        many = plan(None, NAMES, 4, many, NAMES, NAMES[i:i + 4])
    assert len(many.alone) <= MAX_ALONE


def test_changed_request_or_untrusted_old_is_cold():
    old = plan(None, NAMES, 4, cold(None, len(NAMES), 4), NAMES, [NAMES[0]])
    assert plan(3, NAMES, 4, old, NAMES, [NAMES[1]]) == Layout(3, 3, ())
    assert plan(None, NAMES, 4, None, NAMES, [NAMES[1]]) == cold(None, len(NAMES), 4)


def test_buckets_and_sources():
    units = [Unit(Kind.FUNCTION, n, n, None) for n in NAMES[:6]] + \
        [Unit(Kind.KERNEL, "ns::k", "ns_k", None)]
    lay = Layout(None, 2, ("Op1Backward0",))
    files = render_buckets(units, lay)
    assert sorted(files) == ["unity/bucket_0.cpp", "unity/bucket_1.cpp"]
    included = "".join(files.values())
    assert '"../functions/Op1Backward0.cpp"' not in included
    assert included.count("#include") == 6 and '"../ops/ns_k.cpp"' in included
    assert sources(units, lay) == ["unity/bucket_0.cpp", "unity/bucket_1.cpp",
                                   "functions/Op1Backward0.cpp"]
    assert len(sources(units, Layout(0, 0, ()))) == 7


@pytest.mark.parametrize("bad", ["-1", "x", "1.5", True])
def test_parse_unity_rejects(bad):
    with pytest.raises(ValueError, match="non-negative integer"):
        parse_unity(bad)


def test_parse_unity():
    assert parse_unity("auto") is None and parse_unity("0") == 0 and parse_unity(7) == 7
