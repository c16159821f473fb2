"""The tables of the tests that run the example's ops cover the specs: a
new op in specs/ with no case fails here (no compiler needed), not silently
unchecked while docs/yaml-reference.md says every op is gradchecked.

What each table must cover comes from the specs (tests/support/spec_facts.py); which
Function a case exercises, from the case itself (the grad_fn name that
check_matches_builtin asserts at run time)."""

from support import extension_checks as checks
import test_forward_ad as fwd


def test_every_function_has_a_gradcheck_case(example_ops):
    assert sorted(set(checks.case_functions().values())) == sorted(example_ops.functions)


def test_every_function_with_a_forward_formula_has_a_jvp_case(example_ops):
    functions = checks.case_functions()
    assert set(fwd.JVP) <= set(functions), "a JVP case is not a gradcheck case"
    assert sorted({functions[c] for c in fwd.JVP}) == sorted(example_ops.forward)


def test_every_function_has_a_gradgradcheck_case(example_ops):
    functions = checks.case_functions()
    assert set(fwd.GRADGRAD) <= set(functions), "a GRADGRAD case is not a gradcheck case"
    assert sorted({functions[c] for c in fwd.GRADGRAD}) == sorted(example_ops.functions)


def test_every_op_without_a_forward_formula_is_checked_to_refuse_a_dual(example_ops):
    without = set(example_ops.functions) - set(example_ops.forward)
    refused = {op for op, _ in fwd.REFUSING}
    ours = {f"myops::{c}" for c, f in checks.case_functions().items() if f in without}
    assert ours <= refused and ours, (ours, refused)


def test_the_tiny_scenarios_name_every_function_of_the_tiny_fixture():
    from support import scenarios
    from support.spec_facts import example_ops
    assert sorted(scenarios.OPS) == sorted(example_ops(scenarios.TINY).functions)
