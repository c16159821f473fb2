"""The differential suite: the generated Autograd kernels of
tests/fixtures/aten_mirror (ops mirroring ATen's, kernels calling the ATen
op) against ATen's own, same calls, same outcomes: outputs, gradients
(a tensor, None) and errors (exception type and key words).  Where ATen's
behaviour cannot be matched from outside libtorch, docs/yaml-reference.md
says why and the scenario asserts our documented behaviour instead.
The view ops (`diagonal`, `transpose.int`, `unbind.int`: their
ADInplaceOrView, Autograd and forward AD) run the scenarios of
tests/support/view_scenarios.py against ATen's views.  Under autocast and
vmap (issue 53), the mirrors declared with ATen's policies and kinds of
batch rule run tests/support/transform_scenarios.py against ATen's ops,
byte for byte, and each vmap case against a loop over the batch.

Prints "N scenario pairs, N agree" and "N autocast pairs, N agree; M vmap
pairs, M agree"; fails on any disagreement."""

import contextlib
import itertools
import os
import warnings

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.utils import cpp_extension

from support import transform_scenarios, view_scenarios
from support.spec_facts import REPO

from autograd_scons.__main__ import main as generate
from autograd_scons.codegen.tree import CACHE_KEY_CPP

pytestmark = pytest.mark.compile

FIXTURE = os.path.join(REPO, "tests", "fixtures", "aten_mirror")


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    root = tmp_path_factory.mktemp("aten_mirror")
    # In this process: the cuda tier's interpreter has the package only as
    # tests/conftest.py registers it, not for a `python -m` of its own.
    assert generate(["generate", "-q", "--native-functions", os.path.join(FIXTURE, "native_functions.yaml"),
                     "--derivatives", os.path.join(FIXTURE, "derivatives.yaml"), "--out", str(root / "gen"),
                     "--namespace", "mirror::autograd", "--include", "helpers.h", "--unity", "1"]) == 0
    (root / "build").mkdir()
    # (the digest of the generated code in a TU of its own: codegen/emit/cache_key.py)
    cpp_extension.load("autograd_ext_aten_mirror", [os.path.join(FIXTURE, "kernels.cpp"),
                                                    str(root / "gen" / "unity" / "bucket_0.cpp"),
                                                    str(root / "gen" / CACHE_KEY_CPP)],
                       extra_cflags=["-O0", "-w"], extra_include_paths=[FIXTURE, str(root), str(root / "gen")],
                       build_directory=str(root / "build"), is_python_module=False, verbose=False)
    return torch.ops.mirror


# Words an error message is compared by (both messages must contain the same ones).
KEYWORDS = ("leaf Variable", "modified by an inplace operation", "not differentiable with respect to argument",
            "out=", "does not require grad", "view", "forward AD", "not implemented", "backward through the graph",
            "created in no_grad mode", "returns multiple views", "Inplace update to inference tensor")


def outcome(fn):
    """What calling fn did: ('ok', value) or ('error', type name, key words)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", fn())
    except Exception as e:   # noqa: BLE001: every error is an outcome to compare
        # (the message itself is shown on a disagreement, not compared)
        return ("error", type(e).__name__, tuple(k for k in KEYWORDS if k in str(e)), str(e)[:300])


def same(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and \
            a.requires_grad == b.requires_grad and torch.allclose(a.detach(), b.detach(), equal_nan=True)
    return a == b


RESULTS = []


def compare(name, ours, atens):
    a, b = outcome(ours), outcome(atens)
    agree = a[0] == b[0] and (same(a[1], b[1]) if a[0] == "ok" else a[1:3] == b[1:3])
    RESULTS.append((name, agree, a if not agree else None, b if not agree else None))
    return agree


def data(seed, *shapes):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, dtype=torch.double, generator=g) for s in shapes]


def leaves(ts, flags):
    return [t.clone().requires_grad_(f) for t, f in zip(ts, flags)]


def grads_after(fn, inputs, pick=lambda r: r):
    """fn(*inputs), then backward of the picked output's sum: the output and
    each input's .grad (None where none arrived)."""
    out = fn(*inputs)
    picked = pick(out)
    if picked.requires_grad:
        picked.sum().backward()
    return out, [x.grad for x in inputs]


# ----------------------------------------------------------------- ops

def binary_ops(m):
    """(name, ours, aten, shapes, pick, extra args)"""
    return [
        ("mul", m.mul.Tensor, torch.mul, [(3, 4), (3, 4)], lambda r: r),
        ("max.dim", lambda x: m.max.dim(x, 1), lambda x: torch.max(x, 1), [(3, 4)], lambda r: r[0]),
        ("where", lambda c, x, y: m.where.self(c > 0, x, y), lambda c, x, y: torch.where(c > 0, x, y),
         [(3, 4)] * 3, lambda r: r),
        ("cat", lambda x, y: m.cat([x, y], 1), lambda x, y: torch.cat([x, y], 1), [(3, 2), (3, 4)], lambda r: r),
        ("clamp", lambda x: m.clamp(x, -0.5, 0.5), lambda x: torch.clamp(x, -0.5, 0.5), [(3, 4)], lambda r: r),
        ("clamp-min", lambda x: m.clamp(x, -0.5), lambda x: torch.clamp(x, -0.5), [(3, 4)], lambda r: r),
        ("clamp.Tensor", m.clamp.Tensor, torch.clamp, [(3, 4), (3, 4), (3, 4)], lambda r: r),
        ("clamp.Tensor-min", m.clamp.Tensor, torch.clamp, [(3, 4), (3, 4)], lambda r: r),
        ("clamp.Tensor-max", lambda x, hi: m.clamp.Tensor(x, None, hi), lambda x, hi: torch.clamp(x, None, hi),
         [(3, 4), (3, 4)], lambda r: r),
        ("exp", m.exp, torch.exp, [(3, 4)], lambda r: r),
        ("_pdist_forward (no forward formula)", m._pdist_forward, torch.ops.aten._pdist_forward, [(4, 3)],
         lambda r: r),
        ("soft_margin_loss", m.soft_margin_loss, torch.ops.aten.soft_margin_loss, [(3, 4), (3, 4)], lambda r: r),
    ]


def test_differential_suite(m, capsys, record_property):
    RESULTS.clear()
    for i, (name, ours, aten, shapes, pick) in enumerate(binary_ops(m)):
        ts = data(i, *shapes)
        for flags in itertools.product([False, True], repeat=len(ts)):
            tag = f"{name} requires_grad={flags}"
            compare(tag, lambda: grads_after(ours, leaves(ts, flags), pick),
                    lambda: grads_after(aten, leaves(ts, flags), pick))
        all_rg = (True,) * len(ts)
        for mode, ctx in (("no_grad", torch.no_grad), ("inference_mode", torch.inference_mode)):
            def under(fn, ctx=ctx):
                with ctx():
                    out = fn(*leaves(ts, all_rg))
                return [o.requires_grad for o in (out if isinstance(out, tuple) else (out,))], out
            compare(f"{name} {mode}", lambda: under(ours), lambda: under(aten))

        def anomaly(fn):
            with torch.autograd.detect_anomaly(check_nan=False):
                return grads_after(fn, leaves(ts, all_rg), pick)
        compare(f"{name} anomaly mode", lambda: anomaly(ours), lambda: anomaly(aten))

        def double(fn):
            xs = leaves(ts, all_rg)
            y = pick(fn(*xs)).pow(2).sum()
            gs = torch.autograd.grad(y, xs, create_graph=True, allow_unused=True)
            s = sum(g.sum() for g in gs if g is not None and g.requires_grad)
            if not isinstance(s, torch.Tensor):
                return [g is None for g in gs]
            return torch.autograd.grad(s, xs, allow_unused=True)
        compare(f"{name} double backward", lambda: double(ours), lambda: double(aten))

        def forward_ad(fn):
            with fwAD.dual_level():
                xs = [fwAD.make_dual(t, torch.ones_like(t)) for t in ts]
                out = pick(fn(*xs))
                return fwAD.unpack_dual(out).tangent
        compare(f"{name} forward AD (dual tensors)", lambda: forward_ad(ours), lambda: forward_ad(aten))

    # In-place and out= (mul_, mul.out).
    x, y = data(50, (3, 4), (3, 4))
    compare("mul_ on a leaf that requires grad", lambda: m.mul_.Tensor(x.clone().requires_grad_(), y),
            lambda: x.clone().requires_grad_().mul_(y))

    def on_view(fn):
        a = x.clone().requires_grad_()
        v = a[1:]
        fn(v)
        v.sum().backward()
        return a.grad
    compare("mul_ on a view of a leaf", lambda: on_view(lambda v: m.mul_.Tensor(v, y[1:])),
            lambda: on_view(lambda v: v.mul_(y[1:])))

    def inplace_rg_other(fn):
        a, b = x.clone(), y.clone().requires_grad_()
        out = fn(a, b)
        out.sum().backward()
        return out, b.grad
    compare("mul_ with other requiring grad", lambda: inplace_rg_other(m.mul_.Tensor),
            lambda: inplace_rg_other(torch.Tensor.mul_))

    def modified_after_save(fn):
        a, b = x.clone().requires_grad_(), y.clone()
        out = fn(a, b)
        b.add_(1)            # saved by the formula for a
        out.sum().backward()
        return a.grad
    compare("input modified in place after it was saved", lambda: modified_after_save(m.mul.Tensor),
            lambda: modified_after_save(torch.mul))

    def out_variant(fn, flags):
        a, b = leaves([x, y], flags)
        o = torch.empty(3, 4, dtype=torch.double)
        return fn(a, b, out=o)
    for flags in [(False, False), (True, False), (False, True)]:
        compare(f"mul.out requires_grad={flags}", lambda: out_variant(m.mul.out, flags),
                lambda: out_variant(torch.mul, flags))

    def inplace_jvp(fn):
        with fwAD.dual_level():
            a = fwAD.make_dual(x.clone(), torch.ones_like(x))
            fn(a, y)
            return fwAD.unpack_dual(a).tangent
    compare("mul_ forward AD", lambda: inplace_jvp(m.mul_.Tensor), lambda: inplace_jvp(torch.Tensor.mul_))
    compare("mul torch.func.jvp", lambda: torch.func.jvp(m.mul.Tensor, (x, y), (y, x)),
            lambda: torch.func.jvp(torch.mul, (x, y), (y, x)))
    pts = data(51, (4, 3))[0]
    compare("_pdist_forward (no forward formula) torch.func.jvp", lambda: torch.func.jvp(m._pdist_forward, (pts,), (pts,)),
            lambda: torch.func.jvp(torch.ops.aten._pdist_forward, (pts,), (pts,)))

    # An unused output: its incoming gradient is undefined.
    def unused_output(fn):
        a = x.clone().requires_grad_()
        values, _ = fn(a)
        (values * 0).sum().backward()
        return a.grad
    compare("max.dim, indices unused", lambda: unused_output(lambda a: m.max.dim(a, 1)),
            lambda: unused_output(lambda a: torch.max(a, 1)))

    # No entry at all: against the same op registered through torch.library alone.
    for name, ours, ref, n in (("twice", m.twice, torch.ops.mirror_ref.twice, 1),
                               ("floor_divide", m.floor_divide, torch.ops.mirror_ref.floor_divide, 2)):
        for flags in itertools.product([False, True], repeat=n):
            compare(f"{name} (no entry) requires_grad={flags}", lambda: grads_after(ours, leaves([x, y][:n], flags)),
                    lambda: grads_after(ref, leaves([x, y][:n], flags)))
    # ... and against an ATen op without an entry: the forward, its outputs'
    # requires_grad, no_grad and inference_mode.  Backward differs, as
    # docs/yaml-reference.md says: ATen gives each such op its NotImplemented
    # kernel (backward raises); ours is torch.library's fallback (compared
    # above), which opcheck and issue 36 take as the reference.
    def forward_only(fn, flags, ctx=contextlib.nullcontext):
        with ctx():
            out = fn(*leaves([x, y], flags))
        return out, out.requires_grad
    for flags in itertools.product([False, True], repeat=2):
        compare(f"floor_divide (no entry) vs aten, forward, requires_grad={flags}",
                lambda: forward_only(m.floor_divide, flags), lambda: forward_only(torch.floor_divide, flags))
    for mode, ctx in (("no_grad", torch.no_grad), ("inference_mode", torch.inference_mode)):
        compare(f"floor_divide (no entry) vs aten, {mode}", lambda: forward_only(m.floor_divide, (True, True), ctx),
                lambda: forward_only(torch.floor_divide, (True, True), ctx))
    atens = outcome(lambda: grads_after(torch.floor_divide, leaves([x, y], (True, False))))
    assert atens[:3] == ("error", "RuntimeError", ("not implemented",)), atens   # the documented difference

    def myadd(fn, flags):
        a, b = leaves([x, y], flags)
        o = torch.zeros(3, 4, dtype=torch.double)
        fn(a, b, o)
        return o, o._version
    for flags in [(False, False), (True, False), (True, True)]:
        compare(f"myadd_out (no entry, -> ()) requires_grad={flags}",
                lambda: myadd(m.myadd_out, flags), lambda: myadd(torch.ops.mirror_ref.myadd_out, flags))

    # Views (issue 45): the mirror's view ops against ATen's (tests/support/view_scenarios.py).
    for label, ours, atens in view_scenarios.pairs(m):
        compare(f"view {label}", ours, atens)

    n = len(RESULTS)
    agree = sum(1 for r in RESULTS if r[1])
    record_property("summary", f"{n} scenario pairs, {agree} agree")   # shown at the end (tests/conftest.py)
    with capsys.disabled():
        print(f"\n{n} scenario pairs, {agree} agree")
        for name, ok, a, b in RESULTS:
            if not ok:
                print(f"  DISAGREE {name}: ours {a!r:.500} / aten {b!r:.500}")
    assert agree == n, [r[0] for r in RESULTS if not r[1]]


def test_input_without_formula_raises_as_aten_does(m):
    """mm2 has a formula for `a` only: `b` requiring grad raises, as ATen's
    soft_margin_loss does for its `target` (which has none either)."""
    a, b = data(7, (3, 4), (3, 4))
    with pytest.raises(RuntimeError) as ours:
        m.mm2(a, b.requires_grad_())
    assert str(ours.value).startswith("The function 'mm2' is not differentiable with respect to argument 'b'. "
                                      "This input cannot have requires_grad True."), ours.value
    with pytest.raises(RuntimeError) as atens:
        torch.ops.aten.soft_margin_loss(a, b)
    assert str(atens.value) == str(ours.value).replace("'mm2'", "'soft_margin_loss'").replace("'b'", "'target'")
    m.mm2(a.requires_grad_(), b.detach()).sum().backward()   # through `a`: fine


@pytest.mark.parametrize("requires_grad", [False, True])
def test_mutating_op_without_entry_passes_opcheck_as_torch_library_does(m, requires_grad):
    a, b = data(8, (3, 4), (3, 4))
    args = (a.requires_grad_(requires_grad), b.requires_grad_(requires_grad), torch.zeros(3, 4, dtype=torch.double))
    for op in (torch.ops.mirror.myadd_out.default, torch.ops.mirror_ref.myadd_out.default):
        torch.library.opcheck(op, args)


# The scenario that shows each generated kernel of the views at work.
WITHOUT = {"ADInplaceOrView": "_base, _is_view(), the storage", "Autograd": "backward through the view"}


@pytest.mark.parametrize("key", sorted(WITHOUT))
def test_the_view_scenarios_fail_without_a_generated_kernel_and_pass_again_with_it(m, key):
    """The views' `key` kernel replaced by a fallthrough (as if it were not
    registered): ATen's view semantics are lost and the scenarios say so,
    for each mirror; the kernel restored, every pair agrees again."""
    def disagreeing():
        RESULTS.clear()
        for label, ours, atens in view_scenarios.pairs(m):
            compare(label, ours, atens)
        return [r[0] for r in RESULTS if not r[1]]
    lib = torch.library.Library("mirror", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
            for op in ("diagonal", "transpose.int", "unbind.int"):
                lib.impl(op, torch.library.fallthrough_kernel, key)
        without = disagreeing()
    finally:
        lib._destroy()
    assert {f"{name}: {WITHOUT[key]}" for name in view_scenarios.mirrors(m)} <= set(without), without
    assert disagreeing() == []


# ---------------------------------------------------------------- autocast and vmap (issue 53)

def identical(a, b):
    """Byte for byte: tensors of one dtype, shape and requires_grad, equal bits."""
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and \
            a.requires_grad == b.requires_grad and torch.equal(a.detach(), b.detach())
    return a == b


def close(a, b):
    """The same values, up to the rounding of another order of operations (a loop against a batched kernel)."""
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and \
        torch.allclose(a.detach(), b.detach())


def transform_outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", fn())
    except Exception as e:   # noqa: BLE001: every error is an outcome to compare
        return ("error", type(e).__name__, "vmap" in str(e), str(e)[:300])


def disagreements(cases):
    """The labels of the cases whose outcome differs from ATen's (or, under
    vmap, from the loop over the batch), with what each gave."""
    out = []
    for c in cases:
        a, b = transform_outcome(c.ours), transform_outcome(c.atens)
        same_outcome = a[0] == b[0] and (identical(a[1], b[1]) if a[0] == "ok" else a[1:3] == b[1:3])
        looped = transform_outcome(c.loop) if c.loop is not None and a[0] == "ok" else None
        if not same_outcome or (looped is not None and not (looped[0] == "ok" and close(a[1], looped[1]))):
            out.append((c.label, a, b, looped))
    return out


FALLBACK = "we have not yet implemented the batching rule for "


def test_autocast_and_vmap_against_aten(m, capfd, record_property):
    torch._C._functorch._set_vmap_fallback_warning_enabled(True)
    autocast, vmapped = transform_scenarios.autocast_pairs(m), transform_scenarios.vmap_pairs(m)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bad_autocast, bad_vmap = disagreements(autocast), disagreements(vmapped)
        vmap_exp = torch.func.vmap(m.exp)(torch.ones(2, 3))   # no rule: functorch's fallback, which warns
    printed = capfd.readouterr().err + "".join(str(w.message) for w in caught)
    line = (f"{len(autocast)} autocast pairs, {len(autocast) - len(bad_autocast)} agree; "
            f"{len(vmapped)} vmap pairs, {len(vmapped) - len(bad_vmap)} agree")
    record_property("summary", line)
    with capfd.disabled():
        print("\n" + line)
        for label, ours, atens, looped in bad_autocast + bad_vmap:
            print(f"  DISAGREE {label}: ours {ours!r:.400} / aten {atens!r:.400} / loop {looped!r:.200}")
    assert (bad_autocast, bad_vmap) == ([], [])
    # no fallback for an op with a rule; the fallback's warning is seen where it runs
    assert [op for op in transform_scenarios.ops_with_rules() if f"{FALLBACK}mirror::{op}." in printed] == []
    assert f"{FALLBACK}mirror::exp." in printed and torch.equal(vmap_exp, torch.full((2, 3), torch.e))


BROKEN = {  # what is taken away -> (how, the cases that must then disagree)
    "the Autocast kernel unregistered": ("AutocastCPU", transform_scenarios.ops_with_cpu_policy()),
    "the plumbing registered as a fallthrough": ("FuncTorchBatched", transform_scenarios.ops_with_rules()),
}


@pytest.mark.parametrize("broken", sorted(BROKEN) + ["a rule that returns the wrong batch dimension"])
def test_each_generated_kernel_kind_fails_its_pairs_when_broken(m, broken):
    """Each kind of kernel at work: taken away (a fallthrough at its key,
    which is what an unregistered kernel leaves) or given a rule that says
    the wrong batch dimension, its pairs disagree for every op that has it;
    restored, every pair agrees again."""
    cases = transform_scenarios.autocast_pairs(m) + transform_scenarios.vmap_pairs(m)
    lib = torch.library.Library("mirror", "IMPL")
    try:
        if broken in BROKEN:
            key, ops = BROKEN[broken]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
                for op in ops:
                    lib.impl(op, torch.library.fallthrough_kernel, key)
        else:
            ops = ["mm", "diagonal"]   # the rules written by hand (tests/fixtures/aten_mirror/kernels.cpp)
            torch.ops.mirror_testing.wrong_bdim(True)
        bad = {label for label, *_ in disagreements(cases)}
    finally:
        lib._destroy()
        torch.ops.mirror_testing.wrong_bdim(False)
    def op_of(name):   # "norm.Scalar bfloat16 ..." and "diagonal(dim1=-1, ...)" -> norm, diagonal
        return name.split(" ")[0].split(":")[0].split("(")[0].split(".")[0]
    assert {op_of(op) for op in ops} <= {op_of(label) for label in bad}, (broken, sorted(bad))
    assert disagreements(cases) == []


CUDA_POLICIES = ["mm", "logsumexp_last", "exp", "soft_margin_loss", "norm.Scalar"]


def test_cuda_autocast_kernels_are_registered_where_atens_are(m):
    """ATen's CUDA policies (the CUDA autocast of a CPU-only or GPU-less
    torch is only built and registered here; its pairs run on a GPU)."""
    has = {op: torch._C._dispatch_has_kernel_for_dispatch_key(f"mirror::{op}", "AutocastCUDA")
           for op in CUDA_POLICIES + ["inverse", "cat", "mul.Tensor", "diagonal"]}
    assert has == {op: op in CUDA_POLICIES for op in has}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA autocast runs on a GPU; this machine has none "
                    "(its kernels are checked registered above)")
def test_cuda_autocast_against_aten(m):
    # (the mirrors with CUDA kernels)
    bad = disagreements([c for c in transform_scenarios.autocast_pairs(m, "cuda", torch.float16)
                         if c.label.startswith(("mm", "inverse", "logsumexp_last", "exp", "norm"))])
    assert bad == []
