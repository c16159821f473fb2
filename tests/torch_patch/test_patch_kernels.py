"""Edits that change what a Function saves, and a new entry, run in the
installed torch through the patch's own classes and Autograd kernels,
registered over libtorch's (compile tier; docs/patching-torch.md).  One
patch folder holds the five scenarios' edits of torch's own specs:

- `sin` saving `result` instead of `self`;
- a new entry for `heaviside`, which has no formula in torch's specs;
- `exp` saving `self` instead of `result`: its in-place `exp_` (rebase_history,
  the version counter, the clone of what it overwrites);
- `topk` saving `self` (several outputs, the second not differentiable);
- `diagonal` saving `self` (a view: libtorch's ADInplaceOrView kernel makes it).

Then one planted wrong formula in a member-changing edit: exactly the OpInfo
ops whose graphs reach that Function differ from the correct edit's."""

import json
import os
import subprocess
import sys

import pytest

from support.opinfo_diff import differing_ops, read_run
from support.patch_helpers import edited_specs, environ, patch_torch, run_patched

pytestmark = [pytest.mark.compile,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="patching libtorch needs ELF (Linux)")]

SIN = ("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n",
       "- name: sin(Tensor self) -> Tensor\n  self: grad * result.asin().cos().conj()\n")
PLANTED = (SIN[0], SIN[1].replace(".conj()\n", ".conj() + 1\n"))
EXP = ("- name: exp(Tensor self) -> Tensor\n  self: grad * result.conj()\n",
       "- name: exp(Tensor self) -> Tensor\n  self: grad * self.exp().conj()\n")
TOPK = ("  self: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), true)\n"
        "  output_differentiability: [True, False]\n  values: gather(self_t, dim, indices)\n",
        "  self: value_selecting_reduction_backward_symint(grad, dim, indices, self.detach().sym_sizes(), true)\n"
        "  output_differentiability: [True, False]\n  values: gather(self_t, dim, indices)\n")
DIAGONAL = ("  self: diagonal_backward_symint(grad, self.sym_sizes(), offset, dim1, dim2)\n",
            "  self: diagonal_backward_symint(grad, self.detach().sym_sizes(), offset, dim1, dim2)\n")
# appended: a formula for an op torch's specs have none for
HEAVISIDE = ("- name: heaviside(Tensor self, Tensor values) -> Tensor\n  self: zeros_like(grad)\n"
             "  values: grad * (self == 0)\n  result: values_t * (self_p == 0)\n")
# Ops for the planted check: sin's and its neighbours' (tens of seconds a run).
OPS = "sin,cos,sinc,tan,asin,exp,mul,add,sum,_foreach_sin,_foreach_cos,nn.functional.silu,diagonal,topk"

PRELUDE = """
import torch, autograd_scons
from torch.autograd import grad, gradcheck, gradgradcheck
f64 = dict(dtype=torch.float64)
torch.manual_seed(0)
"""


def _specs(tmp, *edits, heaviside=True):
    path = edited_specs(tmp, *edits)
    if heaviside:
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n" + HEAVISIDE)
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kernels")
    env = environ(tmp)
    proc = patch_torch(env, tmp / "patch", "--derivatives", _specs(tmp, SIN, EXP, TOPK, DIAGONAL))
    assert proc.returncode == 0, proc.stderr
    return tmp / "patch", env, tmp, proc.stdout


def _run(folder, code):
    out, env, _, _ = folder
    run = run_patched(env, out, PRELUDE + code)
    assert run.returncode == 0, run.stderr[-3000:]
    # (the dispatcher's one warning that libtorch's kernels are overridden)
    assert "Overriding a previously registered kernel for the same operator and the same dispatch key" in run.stderr
    return run.stdout


def test_the_patch_says_what_it_replaces(folder):
    out, _, _, stdout = folder
    assert "6 of them the patch's own classes, 9 Autograd kernels" in stdout, stdout
    assert "left out 2: derived for a _foreach_ op" in stdout
    with open(out / "gen" / "patch.json") as f:
        summary = json.load(f)
    assert sorted(summary["own_classes"]) == ["DiagonalBackward0", "DiagonalBackward0_copy", "ExpBackward0",
                                              "HeavisideBackward0", "SinBackward0", "TopkBackward0"]
    stdout = _run(folder, "print(sorted(autograd_scons.patched_functions()))")
    assert eval(stdout) == sorted(summary["own_classes"] + [
        "aten::diagonal", "aten::diagonal_copy", "aten::exp", "aten::exp_", "aten::heaviside", "aten::heaviside_",
        "aten::sin", "aten::sin_", "aten::topk"])


def test_sin_saving_its_result(folder):
    assert _run(folder, """
x = (torch.rand(6, **f64) * 3 - 1.5).requires_grad_()
y = torch.sin(x)
print(type(y.grad_fn).__name__, torch.equal(y.grad_fn._saved_result, y), hasattr(y.grad_fn, "_saved_self"))
print(gradcheck(torch.sin, (x,), check_forward_ad=True), gradgradcheck(torch.sin, (x,)))
print(torch.allclose(grad(y.sum(), x)[0], x.detach().cos(), rtol=0, atol=1e-12))
""").split() == ["SinBackward0", "True", "False", "True", "True", "True"]


def test_a_new_entry_for_an_op_without_one(folder):
    out = _run(folder, """
a = torch.tensor([-1.0, 0.0, 2.0, 0.0], **f64, requires_grad=True)
v = torch.tensor([0.3, 0.4, 0.5, 0.6], **f64, requires_grad=True)
h = torch.heaviside(a, v)
print(type(h.grad_fn).__name__, torch.equal(h.grad_fn._saved_self, a))
print([g.tolist() for g in grad(h.sum(), (a, v))])
print(gradcheck(lambda u: torch.heaviside(a.detach(), u), (v,), check_forward_ad=True))
""")
    assert out.splitlines() == ["HeavisideBackward0 True", "[[0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 1.0]]", "True"]
    # without the patch: libtorch has no formula for it
    plain = subprocess.run([sys.executable, "-c", "import torch\nx = torch.zeros(2, requires_grad=True)\n"
                            "torch.heaviside(x, x).sum().backward()"], capture_output=True, text=True,
                           env=folder[1])
    assert "derivative for aten::heaviside is not implemented" in plain.stderr


def test_an_inplace_op_rebases_history_and_counts_versions(folder):
    out = _run(folder, """
x = torch.randn(5, **f64, requires_grad=True)
b = x * 1
before = b._version
b.exp_()
print(type(b.grad_fn).__name__, b._version - before, torch.equal(b.grad_fn._saved_self, x.detach()))
print(torch.equal(grad(b.sum(), x)[0], x.detach().exp()))
base = x * 1
base[1:].exp_()
expected = torch.cat([torch.ones(1, **f64), x.detach()[1:].exp()])
print(type(base.grad_fn).__name__, torch.equal(grad(base.sum(), x)[0], expected))
c = x * 1
d = torch.exp(c)   # saves c now
c.add_(1)
try:
    d.sum().backward()
except RuntimeError as e:
    print("modified by an inplace operation" in str(e))
print(gradcheck(lambda t: t.clone().exp_(), (x,), check_forward_ad=True))
""")
    assert out.splitlines() == ["ExpBackward0 1 True", "True", "CopySlices True", "True", "True"]


def test_an_op_with_several_outputs(folder):
    assert _run(folder, """
m = torch.randn(3, 5, **f64, requires_grad=True)
values, indices = torch.topk(m, 2)
print(type(values.grad_fn).__name__, values.grad_fn._saved_self.shape == m.shape, indices.requires_grad)
print(torch.equal(values.grad_fn._saved_indices, indices))
print(gradcheck(lambda t: torch.topk(t, 2)[0], (m,), check_forward_ad=True))
""").split() == ["TopkBackward0", "True", "False", "True", "True"]


def test_a_view_through_libtorchs_ad_inplace_or_view(folder):
    assert _run(folder, """
q = torch.randn(4, 4, **f64, requires_grad=True)
w = q * 1
d = w.diagonal()
print(type(d.grad_fn).__name__, d._is_view(), d._base is w, d.grad_fn._saved_self.shape == q.shape)
d.mul_(2)
print(type(w.grad_fn).__name__, torch.equal(grad(w.sum(), q)[0], torch.ones(4, 4, **f64) + torch.eye(4, **f64)))
print(gradcheck(lambda t: t.diagonal(1), (q,), check_forward_ad=True))
""").split() == ["DiagonalBackward0", "True", "True", "True", "CopySlices", "True", "True"]


def _opinfo(folder, name):
    out, env, tmp, _ = folder
    path = os.path.join(str(tmp), f"{name}.jsonl")
    run = subprocess.run([sys.executable, "-m", "autograd_scons", "run-patched", str(out), "--", sys.executable,
                          "-m", "support.opinfo_diff", path, "--ops", OPS, "--forward-ad"],
                         capture_output=True, text=True, env=dict(env, PYTHONHASHSEED="0"))
    assert run.returncode == 0, run.stderr[-3000:]
    return read_run(path)[1]


def test_a_planted_formula_in_a_member_changing_edit_differs_where_it_is_reached(folder):
    out, env, tmp, _ = folder
    correct = _opinfo(folder, "correct")
    proc = patch_torch(env, out, "--derivatives", _specs(tmp, PLANTED, EXP, TOPK, DIAGONAL))
    assert proc.returncode == 0, proc.stderr
    try:
        planted = _opinfo(folder, "planted")
    finally:   # (the other tests see the correct edit)
        assert patch_torch(env, out, "--derivatives", _specs(tmp, SIN, EXP, TOPK, DIAGONAL)).returncode == 0
    # The in-place _foreach_ kernels stay libtorch's (the patch generates no
    # _foreach_ kernel; its report says so) and create libtorch's own
    # SinBackward0, a class of the name the patch's own class has, which the
    # planted formula is not in: their records reach that one (_foreach_sin_).
    reaching = {r["op"] for key, r in correct.items() if "SinBackward0" in r.get("reached", ())
                and not (r["op"].startswith("_foreach_") and "|inplace|" in key)}
    print(f"SinBackward0 (own class) planted: {sorted(reaching)} reach it")
    assert {"sin", "cos", "sinc"} <= reaching
    assert differing_ops(correct, planted) == reaching
