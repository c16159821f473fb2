"""Forward-mode AD of the example extension's ops (specs/), generated into
their Autograd kernels from derivatives.yaml's forward formulas: tangents
equal torch.func.jvp's and torch.autograd.forward_ad's of the same
computation with built-in ops, gradcheck passes with check_forward_ad, the
in-place variant updates the tangent, an op without forward formulas
refuses a dual tensor with an error naming it, and every op's backward is
itself differentiable (gradgradcheck).  Also the located error for a
forward formula naming what does not exist (no compiler needed)."""

import pytest

from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.engine.units import load_units
from autograd_scons.codegen.emit.options import EmitOptions

from support import example_build
from support import extension_checks as checks

torch = pytest.importorskip("torch")
import torch.autograd.forward_ad as fwAD  # noqa: E402
from torch.autograd import gradcheck, gradgradcheck  # noqa: E402

D = dict(dtype=torch.double)


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return example_build.myops(tmp_path_factory)


def _x():
    return torch.randn(3, 4, **D)


# op -> (ours, the same with built-in ops, primals); every op with forward formulas.
def jvp_cases(ops):
    w, b, mask = torch.randn(4, **D), torch.randn(4, **D), torch.rand(3, 4, **D)
    seg = torch.tensor([1, 0, 1])
    return {
        "bmul": (ops.bmul, torch.mul, (_x(), w)),
        "scale": (lambda a: ops.scale(a, 2.5), lambda a: a * 2.5, (_x(),)),
        "row_sum": (ops.row_sum, lambda a: a.sum(-1), (_x(),)),
        "affine": (ops.affine, lambda a, c, d: a * c + d, (_x(), w, b)),
        "affine_no_bias": (lambda a, c: ops.affine(a, c, None), lambda a, c: a * c, (_x(), w)),
        "sincos_sign": (lambda a: tuple(ops.sincos_sign(a)[:2]), lambda a: (a.sin(), a.cos()), (_x(),)),
        "myexp": (ops.myexp, torch.exp, (_x(),)),
        "soft_clip": (lambda a: ops.soft_clip(a, 0.7), lambda a: (a * 0.7).tanh(), (_x(),)),
        "cube": (ops.cube, lambda a: a ** 3, (_x(),)),
        "masked_scale": (lambda a: ops.masked_scale(a, mask), lambda a: a * mask, (_x(),)),
        "prod_diff": (lambda a, c: tuple(ops.prod_diff(a, c)), lambda a, c: (a * c, a - c), (_x(), _x())),
        "sum_as": (lambda a: ops.sum_as(a, [2, 3, 2], [0, -1]), lambda a: a.reshape(2, 3, 2).sum([0, -1]),
                   (_x(),)),
        # a view's tangent is the same view of its base's (auto_linear)
        "band": (lambda a: ops.band(a, 1), lambda a: torch.diagonal(a, 1), (_x(),)),
        "band_copy": (lambda a: ops.band_copy(a, -1), lambda a: torch.diagonal_copy(a, -1), (_x(),)),
        "rows": (lambda a: tuple(ops.rows(a)), lambda a: a.unbind(0), (_x(),)),
        "rows_copy": (lambda a: tuple(ops.rows_copy(a)), lambda a: tuple(torch.unbind_copy(a)), (_x(),)),
        "block_sum": (lambda a: ops.block_sum(a, 2), lambda a: a.reshape(3, 2, 2).sum(-1), (_x(),)),
        "block_sum_backward": (lambda g: ops.block_sum_backward(g, 2), lambda g: g.repeat_interleave(2, -1),
                               (_x(),)),
        "running_sum": (ops.running_sum, lambda a: a.sum(0), (_x(),)),
        # the tangent divided by the forward's own counts
        "segment_mean": (lambda a: ops.segment_mean(a, seg, 3),
                         lambda a: torch.zeros(3, 4, **D).index_add(0, seg, a)
                         / torch.tensor([1.0, 2.0, 1.0], **D).unsqueeze(-1), (_x(),)),
    }


# Read off the table; tests/example/test_example_coverage.py checks that it covers
# every Function with a forward formula.
JVP = list(jvp_cases(checks.UNLOADED))


@pytest.mark.compile
@pytest.mark.parametrize("case", JVP)
def test_jvp_equals_builtin_equivalent(ops, case):
    fn, ref, primals = jvp_cases(ops)[case]
    tangents = tuple(torch.randn_like(p) for p in primals)
    out, t = torch.func.jvp(fn, primals, tangents)
    ref_out, ref_t = torch.func.jvp(ref, primals, tangents)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(t, ref_t)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, tt) for p, tt in zip(primals, tangents)]
        res = fn(*duals)
        res = res if isinstance(res, tuple) else (res,)
        got = tuple(fwAD.unpack_dual(r).tangent for r in res)
    assert all(g is not None for g in got), case
    torch.testing.assert_close(got if len(got) > 1 else got[0], ref_t)


@pytest.mark.compile
def test_only_one_dual_input_gets_a_zero_tangent_for_the_other(ops):
    x, w = _x(), torch.randn(4, **D)
    tx = torch.randn_like(x)
    with fwAD.dual_level():
        t = fwAD.unpack_dual(ops.bmul(fwAD.make_dual(x, tx), w)).tangent
    torch.testing.assert_close(t, tx * w)


@pytest.mark.compile
@pytest.mark.parametrize("case", JVP)
def test_gradcheck_with_forward_ad(ops, case):
    fn, _, primals = jvp_cases(ops)[case]
    inputs = tuple(p.clone().requires_grad_(True) for p in primals)
    assert gradcheck(fn, inputs, check_forward_ad=True, check_undefined_grad=True)


@pytest.mark.compile
def test_a_non_differentiable_input_gets_no_tangent(ops):
    # masked_scale's mask is non_differentiable: a dual mask next to a plain
    # self gives the result no tangent (its own is not read).  (Both dual is
    # refused by torch, as for its own ops: the formula `self_t * mask` then
    # yields a tangent that has a tangent itself.)
    x, mask, tm = _x(), torch.rand(3, 4, **D), torch.randn(3, 4, **D)
    with fwAD.dual_level():
        out = fwAD.unpack_dual(ops.masked_scale(x, fwAD.make_dual(mask, tm)))
        assert out.tangent is None
        torch.testing.assert_close(out.primal, x * mask)
    _, t = torch.func.jvp(lambda m: ops.masked_scale(x, m), (mask,), (tm,))
    torch.testing.assert_close(t, torch.zeros_like(x))


@pytest.mark.compile
def test_inplace_variant_updates_the_tangent(ops):
    x, tx = _x(), torch.randn(3, 4, **D)
    with fwAD.dual_level():
        y = fwAD.make_dual(x.clone(), tx.clone())
        assert ops.scale_(y, 3.0) is None  # `-> ()`: y is updated in place
        torch.testing.assert_close(fwAD.unpack_dual(y).primal, x * 3)
        torch.testing.assert_close(fwAD.unpack_dual(y).tangent, tx * 3)

    def scaled(a):
        b = a.clone()
        ops.scale_(b, 3.0)
        return b

    _, t = torch.func.jvp(scaled, (x,), (tx,))
    torch.testing.assert_close(t, tx * 3)
    assert gradcheck(scaled, (_x().requires_grad_(True),), check_forward_ad=True)


# Every op without a forward formula (tests/example/test_example_coverage.py checks that).
REFUSING = [
    ("myops::gather_rows", lambda ops, a: ops.gather_rows(a, torch.tensor([1, 0]))),
    ("myops::stack_sum", lambda ops, a: ops.stack_sum([a, a])),
    ("myops::scale.out", lambda ops, a: ops.scale.out(a, 2.0, out=torch.empty(3, 4, **D))),
]


@pytest.mark.compile
@pytest.mark.parametrize("op,call", REFUSING)
def test_op_without_forward_formula_refuses_a_dual_tensor_naming_the_op(ops, op, call):
    x = _x()
    msg = rf"{op}: forward-mode AD is not supported"
    with fwAD.dual_level():
        with pytest.raises(NotImplementedError, match=msg):
            call(ops, fwAD.make_dual(x, torch.ones_like(x)))
    with pytest.raises(NotImplementedError, match=msg):
        torch.func.jvp(lambda a: call(ops, a), (x,), (torch.ones_like(x),))
    call(ops, x)  # no dual tensor: fine


# Every Function (tests/example/test_example_coverage.py checks that).
GRADGRAD = ["bmul", "scale", "row_sum", "affine", "affine_no_bias", "stack_sum", "sincos_sign", "myexp",
            "gather_rows", "soft_clip", "cube", "masked_scale", "prod_diff", "sum_as", "band", "band_copy", "rows",
            "rows_copy", "block_sum", "block_sum_backward", "running_sum", "segment_mean"]


@pytest.mark.compile
@pytest.mark.parametrize("case", GRADGRAD)
def test_gradgradcheck(ops, case):
    fn, _, inputs, _ = checks.cases(ops)[case]
    assert gradgradcheck(fn, inputs)


# ------------------------------------------------------------ bad input

NATIVE = "- func: fw::twice(Tensor self, Tensor mask) -> Tensor\n"


def _render(tmp_path, derivatives):
    """path -> text of everything generated."""
    nf, dv = tmp_path / "native_functions.yaml", tmp_path / "derivatives.yaml"
    nf.write_text(NATIVE)
    dv.write_text(derivatives)
    opts = EmitOptions(namespace="fw::autograd")
    files = {}
    for unit in load_units(str(nf), str(dv)):
        files.update(unit.render(opts))
    return files


@pytest.mark.parametrize("formula,what", [
    ("selff_t * 2", "uses 'selff_t', but 'selff' is not an argument of 'twice(Tensor self, Tensor mask) -> Tensor'"),
    ("self_t * mask_p", "uses 'mask_p', but 'mask' has no primal: it is not a differentiable input"),
    ("self_t * mask_t", "uses 'mask_t', but 'mask' has no tangent: it is not a differentiable input"),
])
def test_forward_formula_naming_what_does_not_exist_is_a_located_error(tmp_path, formula, what):
    text = ("# comment\n- name: twice(Tensor self, Tensor mask) -> Tensor\n  self: grad * 2\n"
            f"  mask: non_differentiable\n  result: {formula}\n")
    with pytest.raises(SpecError) as e:
        _render(tmp_path, text)
    assert str(e.value) == (f"{tmp_path / 'derivatives.yaml'}:5: entry 'twice(Tensor self, Tensor mask) -> Tensor': "
                            f"forward formula for 'result' {what}")


def test_valid_forward_formula_is_the_result_tangent_after_the_call(tmp_path):
    files = _render(tmp_path, "- name: twice(Tensor self, Tensor mask) -> Tensor\n  self: grad * 2\n"
                              "  mask: non_differentiable\n  result: self_t * 2 + int64_t(0) * self_p\n")
    text = files["ops/fw_twice.cpp"]
    # self's primal and tangent are read, then the formula is the result's
    # new tangent, set on the result; all after the call.
    order = ["return op.call(self, mask);", "at::Tensor self_t = ", "at::Tensor self_p = self._fw_primal(/*level=*/0);",
             "at::Tensor result_new_fw_grad = self_t * 2 + int64_t(0) * self_p;",
             "result._set_fw_grad(result_new_fw_grad, /*level=*/0, /*is_inplace_op=*/false);"]
    assert all(text.count(line) == 1 for line in order), text
    assert [text.index(line) for line in order] == sorted(text.index(line) for line in order)
    # the non-differentiable mask has no tangent: neither read nor tested
    assert "mask._fw_grad" not in text and "isFwGradDefined(self);" in text and "isFwGradDefined(mask" not in text


def test_inplace_variant_with_the_functional_formula_keeps_the_old_primal(tmp_path):
    """`result` is self after the op; `self_p` in the functional formula is
    self before it: cloned before the call, as VariableType does."""
    nf, dv = tmp_path / "native_functions.yaml", tmp_path / "derivatives.yaml"
    nf.write_text("- func: fw::sq(Tensor self) -> Tensor\n- func: fw::sq_(Tensor(a!) self) -> Tensor(a!)\n")
    dv.write_text("- name: sq(Tensor self) -> Tensor\n  self: 2 * grad * self\n"
                  "  result: 2 * self_t * self_p + 0 * result\n")
    opts = EmitOptions(namespace="fw::autograd")
    (text,) = [t for u in load_units(str(nf), str(dv)) if u.name == "fw::sq_"
               for p, t in u.render(opts).items() if p.endswith(".cpp")]
    clone = text.index("original_self_p = self._fw_primal(0).clone();")
    assert clone < text.index("op.call(self)") < text.index("at::Tensor self_new_fw_grad = "
                                                             "2 * self_t * original_self_p + 0 * self_p;")
    assert "self_t_raw.copy_(self_new_fw_grad)" in text
    assert "self._set_fw_grad(self_new_fw_grad, /*level=*/0, /*is_inplace_op=*/true);" in text
