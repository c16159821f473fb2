"""Checks of the stable example's build, run by a torch with nothing else
installed (`python -I stable_example_checks.py FOLDER`): FOLDER holds the
generated files alone (stableops_ext.so, stableops_ext_autograd.py,
stable_autograd_runtime.py) and the helpers (stableops_fakes.py).  Not a
test module and no import of the project: it is what a user of the one
build runs under each torch version (tests/example/test_stable_example.py).
Prints one line per check; exits non-zero on the first that fails."""

import sys

import torch

sys.path.insert(0, sys.argv[1])
import stableops_ext_autograd  # noqa: E402, F401  (loads the library beside it, registers the autograd)

ops = torch.ops.stableops
x = torch.randn(3, 4, dtype=torch.double)
y = torch.randn(3, 4, dtype=torch.double)


def check(name, ok):
    print(f"{name}: {'ok' if ok else 'FAILED'}", flush=True)
    if not ok:
        sys.exit(1)


check("mul", torch.equal(ops.mul(x, y), x * y))
check("scale", torch.allclose(ops.scale(x, 2.5), x * 2.5))
check("shifted", torch.allclose(ops.shifted(x, y), x + y) and torch.equal(ops.shifted(x, None), x))
check("sumsq", torch.allclose(ops.sumsq(x), (x * x).sum()))
check("float32", torch.allclose(ops.scale(x.float(), 0.5), x.float() * 0.5))
try:
    ops.mul(x, y[:2])
    check("mismatched shapes refused", False)
except RuntimeError as e:
    check("mismatched shapes refused", "one shape and dtype" in str(e))

from torch.autograd import gradcheck, gradgradcheck  # noqa: E402

xs = x.clone().requires_grad_()
ys = y.clone().requires_grad_()
cases = [(ops.mul, (xs, ys)), (lambda a: ops.scale(a, 1.5), (xs,)), (ops.shifted, (xs, ys)),
         (lambda a: ops.shifted(a, None), (xs,)), (ops.sumsq, (xs,))]
check("gradcheck", all(gradcheck(f, a) for f, a in cases))
check("gradgradcheck", all(gradgradcheck(f, a) for f, a in cases))
tangent = torch.randn_like(x)
_, jvp = torch.func.jvp(lambda a: ops.mul(a, y), (x,), (tangent,))
check("forward AD (jvp)", torch.allclose(jvp, tangent * y))
_, jvp = torch.func.jvp(ops.sumsq, (x,), (tangent,))
check("forward AD (sumsq)", torch.allclose(jvp, (2 * x * tangent).sum()))
_, jvp = torch.func.jvp(lambda a: ops.shifted(a, None), (x,), (tangent,))
check("forward AD (shifted, no shift)", torch.allclose(jvp, tangent))
with torch.autograd.forward_ad.dual_level():
    dual = torch.autograd.forward_ad.make_dual(x, tangent)
    out = torch.autograd.forward_ad.unpack_dual(ops.scale(dual, 1.5)).tangent
check("forward AD (dual tensors)", out is not None and torch.allclose(out, 1.5 * tangent))
check("forward AD (jacfwd)", torch.allclose(torch.func.jacfwd(ops.sumsq)(x), 2 * x))
check("forward-mode gradcheck", all(gradcheck(f, a, check_forward_ad=True, check_backward_ad=False,
                                              check_undefined_grad=False, check_batched_grad=False)
                                    for f, a in cases))
for name, args in [("mul", (xs, ys)), ("scale", (xs, 1.5)), ("shifted", (xs, ys)), ("shifted", (xs, None)),
                   ("sumsq", (xs,))]:
    result = torch.library.opcheck(getattr(ops, name).default, args)
    check(f"opcheck {name}", all(v == "SUCCESS" for v in result.values()))


def step(a, b):
    return (ops.mul(a, b) + ops.scale(a, 2.0) + ops.shifted(a, b)).sum() + ops.sumsq(b)


compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
a1, b1 = x.clone().requires_grad_(), y.clone().requires_grad_()
a2, b2 = x.clone().requires_grad_(), y.clone().requires_grad_()
step(a1, b1).backward()
compiled(a2, b2).backward()
check("torch.compile(fullgraph=True) forward+backward", torch.allclose(a1.grad, a2.grad) and
      torch.allclose(b1.grad, b2.grad))
