"""The compile layout's rules, as pure functions (codegen/engine/buckets.py,
codegen/engine/unity_files.py)."""

import pytest

from autograd_scons.codegen.engine.buckets import (MAX_ALONE, MAX_PER_BUCKET, PCH_MIN_TUS, PCH_MIN_TUS_CLANG, Layout,
                                            bucket_count, bucket_of, cold,
                                            parse_unity, plan, prelude_pays, slot_of)
from autograd_scons.codegen.engine.update_summary import where
from autograd_scons.codegen.engine.units import Kind, Unit
from autograd_scons.codegen.engine.unity_files import included, included_by_members, inline, render_buckets, render_edit_tus, translation_units
from autograd_scons.codegen.tree import TUKind

NAMES = [f"Op{i}Backward0" for i in range(40)]


def in_bucket(layout, b):
    return {n for n in NAMES if layout.place(n) == b}


def same_bucket_as(a, n=4):
    return next(x for x in NAMES if x != a and bucket_of(x, n) == bucket_of(a, n))


def test_bucket_count_rule():
    # At least one bucket per job when each gets MIN_PER_BUCKET units; big
    # specs are cut into buckets of at most MAX_PER_BUCKET whatever -j is.
    assert bucket_count(24, 2) == 2
    assert bucket_count(24, 1) == 1
    assert bucket_count(24, 64) == 3
    assert bucket_count(711, 2) == bucket_count(711, 8) == 8
    assert bucket_count(711, 64) == 64
    assert bucket_count(0, 4) == 1
    # The other TUs of the build (binding TUs, the caller's sources) take
    # their cores first; the buckets never fall below one, nor below what
    # MAX_PER_BUCKET asks.
    assert bucket_count(29, 2, others=2) == bucket_count(29, 2, others=5) == 1
    assert bucket_count(29, 4, others=2) == 2
    assert bucket_count(29, 6, others=1) == 4
    assert bucket_count(711, 2, others=3) == 8


def test_torch_specs_layout_at_j2_and_j8():
    # torch's 711 Functions with their 3 binding TUs: 8 buckets of at most
    # MAX_PER_BUCKET at -j2 and -j8 alike (a changed header, an added or a
    # removed unit recompile one of ~89 units); past 8 free cores, a bucket
    # a core.  Every TU of the build, the binding TUs included, compiles
    # against the precompiled prelude (tests/tool/test_scons_library.py).
    assert MAX_PER_BUCKET == 96
    assert [bucket_count(711, j, others=3) for j in (1, 2, 8, 11, 16)] == [8, 8, 8, 8, 13]
    assert cold(None, 711, 2, others=3) == Layout(None, 8, slots=2)
    assert cold(None, 711, 8, others=3) == Layout(None, 8, slots=8)
    # the example: 33 units beside its binding TU and kernels.cpp: 1 bucket at -j2
    assert cold(None, 33, 2, others=2) == Layout(None, 1, slots=2)


def test_the_prelude_pays_from_five_tus_taking_it():
    # The precompile costs ~2.3 prelude parses and saves each TU ~0.5: the
    # example (1 bucket, 1 binding TU, kernels.cpp) goes without it, torch's
    # specs (8 buckets, 3 binding TUs) and the example with unity=0 (33 units'
    # TUs, the support TU, a binding TU, kernels.cpp) take it.
    assert PCH_MIN_TUS == 5
    assert [prelude_pays(n) for n in (0, 1, 3, 4, 5, 6)] == [False, False, False, False, True, True]
    assert prelude_pays(8 + 3) and prelude_pays(29 + 1 + 1 + 1)


def test_under_clang_the_prelude_pays_from_two_tus_taking_it():
    # clang's precompile keeps the instantiations: ~1.8 parses, each TU saves
    # nearly one; the example's 3 cold TUs take it, a lone TU does not.
    assert PCH_MIN_TUS_CLANG == 2
    assert [prelude_pays(n, "clang") for n in (0, 1, 2, 3)] == [False, False, True, True]
    assert not prelude_pays(3, "gcc") and prelude_pays(1 + 1 + 1, "clang")


def test_the_other_tus_reach_the_cold_layout_but_not_the_edit_tus():
    assert cold(None, 29, 4, others=2) == Layout(None, 2, slots=4)
    assert plan(None, [f"Op{i}Backward0" for i in range(29)], 4, None, (), (), others=3).layout == \
        Layout(None, 1, slots=4)


def test_cold_layout_depends_on_its_arguments_only():
    assert cold(None, 40, 2) == cold(None, 40, 2) == Layout(None, 2, slots=2)
    assert cold(5, 40, 2) == Layout(5, 5, slots=2)
    assert cold(0, 40, 2).place("Op1Backward0") is None
    p = plan(None, NAMES, 2, None, NAMES, NAMES)
    assert p.layout == cold(None, 40, 2) and p.rewrite == {0, 1}


def test_first_edit_that_can_override_leaves_its_bucket_alone():
    old = cold(None, len(NAMES), 4)
    e = NAMES[3]
    p = plan(None, NAMES, 4, old, NAMES, [e], keep=[e])
    assert p.layout.alone == p.layout.shadowed == (e,)
    assert p.rewrite == set()          # no bucket recompiles: its old text is overridden
    assert p.layout.in_text(e) and p.layout.place(e) is None
    # Edited again: nothing moves, still no bucket.
    again = plan(None, NAMES, 4, p.layout, NAMES, [e], keep=[e])
    assert again == p


def test_first_edit_that_cannot_override_rewrites_its_bucket_once():
    old = cold(None, len(NAMES), 4)
    e = NAMES[3]
    p = plan(None, NAMES, 4, old, NAMES, [e])   # e.g. its header changed, or an op kernel
    b = bucket_of(e, 4)
    assert p.layout.alone == (e,) and p.layout.shadowed == () and p.rewrite == {b}
    assert in_bucket(p.layout, b) == in_bucket(old, b) - {e}
    # Edited again: only its edit TU.
    assert plan(None, NAMES, 4, p.layout, NAMES, [e]).rewrite == set()


def test_shadowed_unit_whose_header_changes_rewrites_its_bucket():
    old = cold(None, len(NAMES), 4)
    e = NAMES[3]
    lay = plan(None, NAMES, 4, old, NAMES, [e], keep=[e]).layout
    p = plan(None, NAMES, 4, lay, NAMES, [e])
    assert p.rewrite == {bucket_of(e, 4)} and p.layout.alone == (e,) and p.layout.shadowed == ()


def test_alone_unit_goes_back_only_when_its_bucket_is_rewritten():
    old = cold(None, len(NAMES), 4)
    a = NAMES[0]
    mate = same_bucket_as(a)
    other = next(n for n in NAMES if bucket_of(n, 4) != bucket_of(a, 4))
    lay = plan(None, NAMES, 4, old, NAMES, [a], keep=[a]).layout
    assert plan(None, NAMES, 4, lay, NAMES, [other], keep=[other]).layout.alone == tuple(sorted([a, other]))
    back = plan(None, NAMES, 4, lay, NAMES, [mate])   # mate cannot override: its bucket is rewritten
    assert back.layout.alone == (mate,) and back.layout.place(a) == bucket_of(a, 4)
    assert back.layout.shadowed == ()


def test_removal_addition_and_damage():
    old = cold(None, len(NAMES), 4)
    gone = NAMES[5]
    p = plan(None, NAMES[:5] + NAMES[6:], 4, old, NAMES, [])
    assert p.layout == old and p.rewrite == {bucket_of(gone, 4)}
    added = plan(None, NAMES + ["NewBackward0"], 4, old, NAMES, ["NewBackward0"])
    assert added.layout.alone == ("NewBackward0",) and added.rewrite == set()
    # A shadowed unit removed: its old text must leave its bucket.
    lay = plan(None, NAMES, 4, old, NAMES, [gone], keep=[gone]).layout
    p = plan(None, NAMES[:5] + NAMES[6:], 4, lay, NAMES, [])
    assert p.rewrite == {bucket_of(gone, 4)} and p.layout.alone == ()
    assert plan(None, NAMES, 4, old, NAMES, [], damaged=[2]).rewrite == {2}


def test_mass_edits_go_back_into_their_buckets():
    old = cold(None, len(NAMES), 4)
    few = plan(None, NAMES, 4, old, NAMES, NAMES[:10], keep=NAMES[:10])
    assert few.layout.alone == tuple(sorted(NAMES[:10])) and few.rewrite == set()
    many = [f"Op{i}Backward0" for i in range(MAX_ALONE + 1)]
    p = plan(None, many, 4, cold(None, len(many), 4), many, many, keep=many)
    assert p.layout.alone == () and p.rewrite == set(range(p.layout.buckets))


def test_changed_request_or_untrusted_old_is_cold():
    old = plan(None, NAMES, 4, cold(None, len(NAMES), 4), NAMES, [NAMES[0]]).layout
    assert plan(3, NAMES, 4, old, NAMES, [NAMES[1]]).layout == Layout(3, 3, slots=4)
    assert plan(None, NAMES, 4, None, NAMES, [NAMES[1]]).layout == cold(None, len(NAMES), 4)


def test_where_says_bucket_edit_tu_and_override():
    lay = Layout(None, 2, ("Op1Backward0", "Op2Backward0"), ("Op1Backward0",), slots=2)
    assert where(lay, "Op3Backward0") == f"compiled in unity/bucket_{bucket_of('Op3Backward0', 2)}.cpp"
    assert f"unity/edited_{slot_of('Op1Backward0', 2)}.cpp" in where(lay, "Op1Backward0")
    assert "overridden at link" in where(lay, "Op1Backward0")
    assert "overridden" not in where(lay, "Op2Backward0")


def test_buckets_hold_text_and_edit_tus_include():
    units = [Unit(Kind.FUNCTION, n, n, None) for n in NAMES[:6]] + \
        [Unit(Kind.KERNEL, "ns::k", "ns_k", None)]
    lay = Layout(None, 2, ("Op1Backward0",), slots=1)
    text = {u.name: f'#include "{u.stem}.h"\n#include "../prelude_impl.h"\nint {u.stem.replace(":", "")};\n'
            for u in units}
    files = render_buckets(units, lay, [0, 1], lambda u: text[u.name])
    assert sorted(files) == ["unity/bucket_0.cpp", "unity/bucket_1.cpp"]
    both = "".join(files.values())
    assert "Op1Backward0" not in both and both.count("#line 1") == 6
    assert '#line 1 "../ops/ns_k.cpp"\n#include "../ops/ns_k.h"\n#include "../prelude_impl.h"' in both
    assert '#include "../functions/Op0Backward0.h"' in both
    assert render_buckets(units, lay, [1], lambda u: text[u.name]).keys() == {"unity/bucket_1.cpp"}
    edits = render_edit_tus(units, lay)
    assert edits == {"unity/edited_0.cpp": edits["unity/edited_0.cpp"]}
    assert '#include "../functions/Op1Backward0.cpp"' in edits["unity/edited_0.cpp"]
    # Edit TUs first: the linker takes their definitions.
    tus = translation_units(units, lay)
    assert [t.path for t in tus] == ["unity/edited_0.cpp", "unity/bucket_0.cpp", "unity/bucket_1.cpp"]
    assert [t.kind for t in tus] == [TUKind.EDIT, TUKind.BUCKET, TUKind.BUCKET]
    # The support TU (emit/functions/support.py): in the first bucket, or a TU of its own.
    assert files["unity/bucket_0.cpp"].count('#include "../support.cpp"') == 1
    assert "support.cpp" not in files["unity/bucket_1.cpp"]
    tus = translation_units(units, Layout(0, 0))
    assert [t.path for t in tus] == [u.source for u in units] + ["support.cpp"]
    assert [t.kind for t in tus] == [TUKind.UNIT] * len(units) + [TUKind.SUPPORT]


def test_inline_respells_only_quoted_includes():
    u = Unit(Kind.FUNCTION, "AddBackward0", "AddBackward0", None)
    out = inline(u, '#include <ATen/ATen.h>\n#include "AddBackward0.h"\n  # include "../x/y.h"\n')
    assert out == ('#line 1 "../functions/AddBackward0.cpp"\n#include <ATen/ATen.h>\n'
                   '#include "../functions/AddBackward0.h"\n  # include "../x/y.h"\n')


@pytest.mark.parametrize("bad", ["-1", "x", "1.5", True])
def test_parse_unity_rejects(bad):
    with pytest.raises(ValueError, match="non-negative integer"):
        parse_unity(bad)


def test_parse_unity():
    assert parse_unity("auto") is None and parse_unity("0") == 0 and parse_unity(7) == 7


@pytest.mark.parametrize("bad", [
    {"request": None, "buckets": 2, "alone": [], "shadowed": [], "slots": 0},          # no edit TU
    {"request": None, "buckets": 2, "alone": [], "shadowed": ["A"], "slots": 2},       # shadowed, not out
    {"request": None, "buckets": -1, "alone": [], "shadowed": [], "slots": 2},
    {"request": None, "buckets": 2, "alone": "A", "shadowed": [], "slots": 2},
    {"request": None, "buckets": 2, "alone": [], "slots": 2},                          # format 2's
])
def test_damaged_layout_section_is_refused(bad):
    with pytest.raises(ValueError, match="bad layout section"):
        Layout.from_json(bad)


def test_layout_round_trips():
    lay = Layout(None, 3, ("A", "B"), ("B",), slots=2)
    assert Layout.from_json(lay.to_json()) == lay


def test_what_a_members_old_text_includes_is_read_back_from_its_bucket():
    k = Unit(Kind.KERNEL, "ns::k", "ns_k", None)
    f = Unit(Kind.FUNCTION, "KBackward0", "KBackward0", None)
    texts = {k.name: '#include "../functions/KBackward0.h"\n#include <torch/library.h>\nint k;\n',
             f.name: '#include "KBackward0.h"\n#include "../prelude_impl.h"\nint f;\n'}
    assert included(k.source, texts[k.name]) == {"functions/KBackward0.h"}
    assert included(f.source, texts[f.name]) == {"functions/KBackward0.h", "prelude_impl.h"}
    bucket = render_buckets([k, f], Layout(None, 1), [0], lambda u: texts[u.name])["unity/bucket_0.cpp"]
    assert included_by_members(bucket) == {"ops/ns_k.cpp": {"functions/KBackward0.h"},
                                           "functions/KBackward0.cpp": {"functions/KBackward0.h", "prelude_impl.h"}}
