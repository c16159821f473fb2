"""The translator's proof on torch's own formulas (issue 59, item 5): torch
2.13's derivatives.yaml through the project's parser and the translator,
and for every translated backward formula whose op OpInfo's samples reach
(forward and backward, 10 samples an op, float64), libtorch's gradient
against the Python formula's on the same inputs, outputs and cotangents
(tests/support/formula_diff.py, formula_compare.py).  It prints one line
(also at the end of the run: conftest's summary), the same for the forward
formulas against libtorch's forward AD (dual tensors, a random tangent on
every differentiable input; tests/support/formula_forward.py), and writes what was not
translated, with the reasons, beside the test's temporary folder (-v: here).

Full tier: about 40 s on 2 cores, most of it OpInfo's samples.
"""

from __future__ import annotations

import warnings

import pytest

from autograd_scons.codegen.formula import names

pytestmark = pytest.mark.compile

SAMPLES = 10   # per op: 5 compared 490 formulas, 10 compared 505 (both with 67 helpers), all samples ~2.5 min


def _run(ops=(), samples=SAMPLES):
    from support.formula_compare import run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(set(ops), samples)


def test_torch_formulas_translate_and_agree_with_libtorch(capsys, record_property, request, tmp_path_factory):
    from autograd_scons.codegen.formula.torch_helpers import HELPERS
    from support.formula_diff import helper_shares
    from support.formula_forward import run_forward
    line, lines, r = _run()
    shares, per_helper = helper_shares(HELPERS)
    forward, forward_lines, fr = run_forward(r["infos"], r["table"], r["calls"])
    report = tmp_path_factory.getbasetemp() / "torch_formulas.txt"
    report.write_text("\n".join([line, shares, forward] + per_helper + lines + forward_lines) + "\n")
    for summary in (line, shares, forward):
        record_property("summary", summary)
    with capsys.disabled():
        print(f"\n{line}\n{shares}\n{forward}\n(untranslated, with reasons, each helper's count, and every "
              f"formula not compared: {report})")
        if request.config.getoption("verbose") > 0:
            print("\n".join(lines + forward_lines))
    total = len(r["formulas"])
    assert len(r["translated"]) >= 0.6 * total
    assert len(r["compared"]) >= 0.6 * total, line
    differing = [x for x in lines if x.startswith("DIFFERS")]
    assert not differing and len(r["close"]) == len(r["compared"]), "\n".join(differing)
    # forward formulas (`result: ...`) against libtorch's forward AD, the same calls
    forward_differing = [x for x in forward_lines if x.startswith("FORWARD DIFFERS")]
    assert not forward_differing and fr["compared"], "\n".join(forward_differing)
    # the untranslated each say why, naming the construct
    assert all(": " in x.split(")", 1)[1] for x in lines if x.startswith("UNTRANSLATED"))


def test_a_wrong_table_entry_makes_the_differential_fail(monkeypatch):
    """A planted mistake in the translation table (M_PI printed as e) is
    caught: erf's formula, 2/sqrt(pi) exp(-x^2), then differs from libtorch's."""
    line, lines, _ = _run(["erf"], 2)
    assert not any(x.startswith("DIFFERS") for x in lines), line
    monkeypatch.setitem(names.CONSTANTS, "M_PI", ("math.e", "float"))
    line, lines, r = _run(["erf"], 2)
    assert any(x.startswith("DIFFERS ErfBackward0") for x in lines), line
    assert len(r["close"]) < len(r["compared"])


def test_the_helpers_read_from_the_sources_are_the_packages():
    """helper_names reads torch_helpers/ without importing torch; the
    package's own HELPERS (imported) must say the same."""
    from autograd_scons.codegen.formula.helper_names import helper_types
    from autograd_scons.codegen.formula.torch_helpers import HELPERS
    assert helper_types() == HELPERS
    assert {"_to_copy_backward", "to_args_sizes_symint", "handle_r_to_c"} <= set(HELPERS)
