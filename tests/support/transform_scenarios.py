"""The differential suite's autocast and vmap scenarios (issue 53): each
runs on an op of tests/fixtures/aten_mirror, declared with ATen's autocast
policy and ATen's kind of batch rule, and on ATen's op, and
tests/codegen/emit/op_kernels/test_aten_differential.py compares the outcomes byte for byte
(values, dtypes, gradients, errors).  Each vmap case is also compared with
a Python loop over the batch (`loop`).  (Not a test module: `autocast_pairs`
and `vmap_pairs` list the cases, each a call with no argument.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
from torch.func import grad, hessian, jacfwd, jacrev, vmap

B = 3   # the batch


@dataclass(frozen=True)
class Case:
    label: str
    ours: Callable[[], Any]
    atens: Callable[[], Any]
    loop: Optional[Callable[[], Any]] = None   # vmap: the same over the batch, one example at a time


def _randn(seed, *shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def _matrix(seed, *shape, dtype=torch.float64):
    """Well conditioned square matrices (for inverse)."""
    n = shape[-1]
    return (_randn(seed, *shape, dtype=torch.float64) / n + torch.eye(n, dtype=torch.float64) * 2).to(dtype)


# ---------------------------------------------------------------- autocast

F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64


def _casts(prof):
    return sum(1 for e in prof.events() if e.name == "aten::_to_copy")


def _under_autocast(fn, inputs, flags, device, dtype):
    """fn(*inputs) under autocast (inputs flagged True require grad), then
    the backward of its sum outside: the output, each input's .grad, and
    how many casts the call made (ATen's policies cast through `_to_copy`;
    an op's own type promotion does not)."""
    xs = [t.clone().requires_grad_(f) for t, f in zip(inputs, flags)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with torch.autocast(device, dtype=dtype):
            out = fn(*xs)
    if out.requires_grad:
        out.sum().backward()
    return out, [x.grad for x in xs], _casts(prof)


def _cached(fn, device, dtype, make):
    """How many casts three calls on one weight make under one autocast
    region (ATen casts a leaf that requires grad once: its cache), and the
    outputs."""
    w = make(10, 5, 3).requires_grad_()
    xs = [make(11 + i, 4, 5) for i in range(3)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with torch.autocast(device, dtype=dtype):
            outs = [fn(x, w) for x in xs]
    return _casts(prof), outs


def autocast_pairs(m, device="cpu", dtype=torch.bfloat16) -> list[Case]:
    """Each op with ATen's policy for `device` (or ATen's lack of one) on
    both sides: outputs, their dtypes and the gradients' dtypes."""
    def on(t):
        return t.to(device)

    ops = [  # name, ours, ATen's, (shapes, dtype mixes)
        ("mm", m.mm, torch.mm, [(4, 5), (5, 3)], [(F32, F32), (F32, BF16), (BF16, BF16), (F64, F64), (F64, F32)]),
        ("inverse", m.inverse, torch.inverse, [(4, 4)], [(F32,), (BF16,), (F64,)]),
        ("logsumexp_last", m.logsumexp_last, lambda x: torch.logsumexp(x, -1), [(4, 5)], [(F32,), (BF16,)]),
        ("mul", m.mul.Tensor, torch.mul, [(4, 5), (4, 5)], [(F32, BF16), (BF16, BF16), (F32, F32)]),
        ("cat", lambda a, b: m.cat([a, b]), lambda a, b: torch.cat([a, b]), [(2, 5), (3, 5)],
         [(F32, BF16), (BF16, BF16), (F64, F32)]),
        ("soft_margin_loss", m.soft_margin_loss, torch.ops.aten.soft_margin_loss, [(4, 5), (4, 5)],
         [(BF16, BF16), (F32, BF16), (F64, F64)]),
        ("exp", m.exp, torch.exp, [(4, 5)], [(BF16,), (F32,)]),
        ("diagonal (a view: no policy)", lambda x: m.diagonal(x, 1), lambda x: torch.diagonal(x, 1), [(4, 5)],
         [(BF16,), (F32,)]),
    ]
    cases = []
    for name, ours, atens, shapes, mixes in ops:
        for i, mix in enumerate(mixes):
            make = _matrix if name == "inverse" else _randn
            inputs = [on(make(20 + i + 7 * j, *s, dtype=d)) for j, (s, d) in enumerate(zip(shapes, mix))]
            # (soft_margin_loss has no formula for its target: ATen refuses it requiring grad)
            grads = (True, False) if name == "soft_margin_loss" else (True,) * len(inputs)
            for flags in ((False,) * len(inputs), grads):
                label = f"{name} {'/'.join(str(d).removeprefix('torch.') for d in mix)} requires_grad={flags[0]}"
                cases.append(Case(label, lambda o=ours, x=inputs, f=flags: _under_autocast(o, x, f, device, dtype),
                                  lambda a=atens, x=inputs, f=flags: _under_autocast(a, x, f, device, dtype)))
    # the cache: a weight cast once per autocast region, as ATen's
    cases.append(Case("mm: casts of one weight over three calls", lambda: _cached(m.mm, device, dtype, _dev(_randn, on)),
                      lambda: _cached(torch.mm, device, dtype, _dev(_randn, on))))
    # fp32_append_dtype (ATen's CUDA policy of norm.Scalar, declared for CPU as well): against ATen's
    # norm.ScalarOpt_dtype called as ATen's wrapper calls it (float32 for an eligible first argument)
    for d in (BF16, F32, F64):
        x = on(_randn(40, 4, 5, dtype=d))
        out_dtype = F64 if d == F64 else F32
        cases.append(Case(f"norm.Scalar {str(d).removeprefix('torch.')} (fp32_append_dtype)",
                          lambda x=x: _under_autocast(lambda t: m.norm.Scalar(t, 2), [x], [False], device, dtype),
                          lambda x=x, o=out_dtype: _under_autocast(lambda t: torch.norm(t, 2, dtype=o), [x], [False],
                                                                   device, dtype)))
    return cases


def _dev(make, on):
    return lambda seed, *shape: on(make(seed, *shape))


# ---------------------------------------------------------------- vmap

def _at(t, dim):
    """`t` (batched along dim 0) with its batch dimension moved to `dim`
    (None: one example, unbatched)."""
    return t[0] if dim is None else t.movedim(0, dim)


def _loop(fn, args, in_dims):
    """fn over the batch, one example at a time, stacked along dimension 0."""
    outs = [fn(*[a if d is None else a.select(d, i) for a, d in zip(args, in_dims)]) for i in range(B)]
    if isinstance(outs[0], (tuple, list)):
        return type(outs[0])(torch.stack(list(o)) for o in zip(*outs))
    return torch.stack(outs)


def _binary_dims():
    return [(0, 0), (0, None), (None, 0), (1, 0), (-1, None), (0, -2)]


def vmap_pairs(m) -> list[Case]:
    D = torch.float64
    ops = [  # name, ours, ATen's, example shapes, in_dims to try
        ("mul", m.mul.Tensor, torch.mul, [(4, 5), (4, 5)], _binary_dims() + [(0, 1)]),
        ("mul (broadcast)", m.mul.Tensor, torch.mul, [(4, 5), (5,)], [(0, 0), (None, 0), (1, -1)]),
        ("mm", m.mm, torch.mm, [(4, 5), (5, 3)], _binary_dims()),
        ("inverse", m.inverse, torch.inverse, [(4, 4)], [(0,), (1,), (-1,), (2,)]),
        ("logsumexp_last", m.logsumexp_last, lambda x: torch.logsumexp(x, -1), [(4, 5)], [(0,), (1,), (-1,)]),
        ("diagonal", lambda x: m.diagonal(x, 1), lambda x: torch.diagonal(x, 1), [(4, 5)], [(0,), (1,), (-1,)]),
        ("diagonal(dim1=-1, dim2=0)", lambda x: m.diagonal(x, 0, -1, 0), lambda x: torch.diagonal(x, 0, -1, 0),
         [(4, 5)], [(0,), (2,)]),
    ]
    cases = []
    for k, (name, ours, atens, shapes, dims) in enumerate(ops):
        make = _matrix if name == "inverse" else _randn
        batched = [make(50 + k + j, B, *s, dtype=D) for j, s in enumerate(shapes)]
        for in_dims in dims:
            args = [_at(t, d) for t, d in zip(batched, in_dims)]
            cases.append(Case(f"{name} in_dims={in_dims}", lambda o=ours, a=args, d=in_dims: vmap(o, d)(*a),
                              lambda o=atens, a=args, d=in_dims: vmap(o, d)(*a),
                              lambda o=ours, a=args, d=in_dims: _loop(o, a, d)))
        # nested: two batch dimensions, the outer vmap's at 1, the inner's at 0
        twice = [make(60 + k + j, B, B, *s, dtype=D) for j, s in enumerate(shapes)]
        n = len(shapes)
        cases.append(Case(f"{name} nested vmap", lambda o=ours, a=twice, n=n: vmap(vmap(o), (1,) * n)(*a),
                          lambda o=atens, a=twice, n=n: vmap(vmap(o), (1,) * n)(*a),
                          lambda o=ours, a=twice, n=n: _loop(lambda *x: _loop(o, x, (0,) * n), a, (1,) * n)))
        example = [t[0] for t in batched]
        first = (0,) + (None,) * (len(shapes) - 1)

        cases.append(Case(f"{name} vmap(grad)",
                          lambda o=ours, a=batched, e=example, f=first: vmap(grad(_summed(o, ())), f)(a[0], *e[1:]),
                          lambda o=atens, a=batched, e=example, f=first: vmap(grad(_summed(o, ())), f)(a[0], *e[1:]),
                          lambda o=ours, a=batched, e=example, f=first: _loop(grad(_summed(o, ())), [a[0]] + e[1:], f)))
        rest = tuple(example[1:])
        for label, transform in (("jacrev", jacrev), ("jacfwd", jacfwd)):
            cases.append(Case(f"{name} {label}", lambda o=ours, x=example[0], r=rest, t=transform: t(_partial(o, r))(x),
                              lambda o=atens, x=example[0], r=rest, t=transform: t(_partial(o, r))(x),
                              lambda o=ours, x=example[0], r=rest: torch.autograd.functional.jacobian(
                                  _partial(o, r), x, vectorize=False)))
        cases.append(Case(f"{name} hessian", lambda o=ours, x=example[0], r=rest: hessian(_summed(o, r))(x),
                          lambda o=atens, x=example[0], r=rest: hessian(_summed(o, r))(x),
                          lambda o=ours, x=example[0], r=rest: torch.autograd.functional.hessian(
                              _summed(o, r), x, vectorize=False)))
    cases += _inplace_cases(m)
    return cases


def _partial(op, rest):
    return lambda t: op(t, *rest)


def _summed(op, rest):
    return lambda t, *more: op(t, *rest, *more).sum()


def _inplace_cases(m) -> list[Case]:
    D = torch.float64
    x, y = _randn(80, B, 4, 5, dtype=D), _randn(81, B, 4, 5, dtype=D)
    cases = []
    for in_dims in [(0, 0), (0, None), (1, 0), (0, -1)]:
        a, b = _at(x, in_dims[0]), _at(y, in_dims[1])

        def write(op, a=a, b=b, d=in_dims):
            base = a.clone()
            vmap(lambda s, o: op(s, o), d)(base, b)   # written in place through the batched tensor
            return base
        cases.append(Case(f"mul_ in_dims={in_dims}", lambda w=write: w(m.mul_.Tensor), lambda w=write: w(torch.Tensor.mul_),
                          lambda a=a, b=b, d=in_dims: _loop(lambda s, o: s.clone().mul_(o), [a, b], d).movedim(0, d[0])))
    # an unbatched self written with a batched other: refused, one line naming the op (ATen refuses too)
    cases.append(Case("mul_ with self unbatched, other batched (refused)",
                      lambda: vmap(m.mul_.Tensor, (None, 0))(x[0].clone(), y),
                      lambda: vmap(torch.Tensor.mul_, (None, 0))(x[0].clone(), y)))

    # an in-place write through a vmapped view reaches the base, as with ATen's diagonal
    def through_view(view, in_dim):
        def f(t):
            base = t * 1.0
            view(base).mul_(2.0).add_(1.0)
            return base
        return vmap(f, in_dim)(_at(x, in_dim))
    for d in (0, 1, -1):
        cases.append(Case(f"diagonal: an in-place write through the vmapped view, in_dims={d}",
                          lambda d=d: through_view(lambda t: m.diagonal(t, 1), d),
                          lambda d=d: through_view(lambda t: torch.diagonal(t, 1), d),
                          lambda d=d: _loop(lambda t: _write_diag(m, t), [_at(x, d)], (d,))))
    # ... and gradients through it, under vmap(grad)
    def grad_through_view(view):
        def f(t):
            base = t * 1.5
            view(base).mul_(3.0)
            return (base * base).sum()
        return vmap(grad(f))(x)
    cases.append(Case("diagonal: vmap(grad) through an in-place write on the view",
                      lambda: grad_through_view(lambda t: m.diagonal(t, 1)),
                      lambda: grad_through_view(lambda t: torch.diagonal(t, 1)),
                      lambda: _loop(grad(lambda t: _grad_diag(m, t)), [x], (0,))))
    return cases


def _write_diag(m, t):
    base = t * 1.0
    m.diagonal(base, 1).mul_(2.0).add_(1.0)
    return base


def _grad_diag(m, t):
    base = t * 1.5
    m.diagonal(base, 1).mul_(3.0)
    return (base * base).sum()


def ops_with_rules() -> list[str]:
    """The mirror ops that declare a batch rule (their fallback must not run)."""
    return ["mul.Tensor", "mul_.Tensor", "mm", "inverse", "logsumexp_last", "diagonal"]


def ops_with_cpu_policy() -> list[str]:
    return ["mm", "inverse", "cat", "soft_margin_loss", "norm.Scalar"]

