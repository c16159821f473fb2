"""The differential suite's view scenarios (issue 45): each runs on a view op
of tests/fixtures/aten_mirror and on ATen's op with the same schema and
formula (`diagonal`, `transpose.int`, `unbind.int`), and every outcome is
compared by tests/codegen/emit/op_kernels/test_aten_differential.py: values, gradients,
tangents, grad_fn names, `_base`/`_is_view()`, versions, errors.  (Not a
test module: `pairs(m)` lists (label, ours, ATen's), each a call with no
argument.)"""

import torch
import torch.autograd.forward_ad as fwAD

D = dict(dtype=torch.double)
SHAPE = (4, 5)


def mirrors(m):
    """name -> (ours, ATen's): each makes a view of a (4, 5) tensor."""
    return {
        "diagonal(offset=1)": (lambda t: m.diagonal(t, 1), lambda t: torch.diagonal(t, 1)),
        "diagonal(offset=-2)": (lambda t: m.diagonal(t, -2), lambda t: torch.diagonal(t, -2)),
        "transpose": (lambda t: m.transpose.int(t, 0, 1), lambda t: t.transpose(0, 1)),
        "unbind[1]": (lambda t: m.unbind.int(t)[1], lambda t: t.unbind(0)[1]),
    }


def inplace_ops(m):
    """The in-place ops written into views: ATen's, and the mirror's (a generated kernel)."""
    return {"mul_": lambda t: t.mul_(2.0), "mirror::mul_": lambda t: m.mul_.Tensor(t, torch.full_like(t, 2.0))}


def inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*SHAPE, generator=g, **D), torch.randn(*SHAPE, generator=g, **D)


def weights(t):
    return torch.arange(t.numel(), **D).reshape(t.shape)


def gname(t):
    return t.grad_fn.name() if t.grad_fn is not None else None


# ------------------------------------------------------------ one view each

def backward_through_view(V):
    x = inputs()[0].requires_grad_()
    v = V(x)
    (v * weights(v)).sum().backward()
    return {"v": v.detach(), "grad": x.grad, "grad_fn": gname(v), "version shared": v._version == x._version}


def inplace_on_view(V, ip):
    x = inputs()[0].requires_grad_()
    b = x * 1.5
    v = V(b)
    ip(v)
    (b * weights(b)).sum().backward()
    return {"b": b.detach(), "grad": x.grad, "b.grad_fn": gname(b), "v.grad_fn": gname(v),
            "versions": (b._version, v._version)}


def inplace_into_view_of_plain_leaf(V):
    """a leaf without grad, a view of it written with a tensor that requires grad"""
    x0, y0 = inputs()
    base, y = x0.clone(), y0.clone().requires_grad_()
    v = V(base)
    v.copy_(V(y) * 3)
    base.sum().backward()
    return {"base": base.detach(), "grad_y": y.grad, "base.grad_fn": gname(base)}


def base_modified_after_view(V):
    x0, y0 = inputs()
    x, y = x0.requires_grad_(), y0.requires_grad_()
    b = x * 1.0
    v = V(b)
    b.mul_(y)
    (v * weights(v)).sum().backward()
    return {"v": v.detach(), "grad_x": x.grad, "grad_y": y.grad, "v.grad_fn": gname(v)}


def view_of_view(V, ip):
    """ours of ATen's views, then ATen's view of ours (or ours of ours), written in place"""
    x = inputs()[0].requires_grad_()
    b = x * 1.0
    v1 = V(b.t().t())
    v2 = V(b)
    vv = v2[1:] if v2.dim() == 1 else V(v2.t())
    ip(vv)
    (b * weights(b)).sum().backward()
    return {"v1": v1.detach(), "b": b.detach(), "grad": x.grad, "vv._base is b": vv._base is b,
            "v1._base is b": v1._base is b, "vv.grad_fn": gname(vv)}


def no_grad_view_then_inplace(V):
    b = inputs()[0].requires_grad_() * 1.0
    with torch.no_grad():
        v = V(b)
    v.mul_(2)
    return {"v": v.detach()}


def no_grad_view_inplace_under_no_grad(V):
    b = inputs()[0].requires_grad_() * 1.0
    with torch.no_grad():
        v = V(b)
        v.mul_(2)
    return {"v": v, "b": b.detach(), "v._is_view": v._is_view()}


def inference_normal_tensor_inside(V):
    x = inputs()[0]
    with torch.inference_mode():
        v = V(x)
        return {"v": v.clone(), "is_inference": v.is_inference(), "_is_view": v._is_view(), "_base is x": v._base is x}


def inference_view_modified_outside(V):
    x = inputs()[0]
    with torch.inference_mode():
        v = V(x)
    v.mul_(2)
    return {"v": v, "x": x}


def inference_tensor(V):
    with torch.inference_mode():
        x = inputs()[0]
        v = V(x)
        v.mul_(2)
        return {"x": x.clone(), "v": v.clone(), "is_inference": v.is_inference(), "_is_view": v._is_view()}


def inference_tensor_viewed_outside(V):
    with torch.inference_mode():
        x = inputs()[0]
    v = V(x)
    return {"v": v, "is_inference": v.is_inference(), "_is_view": v._is_view()}


def inference_tensor_modified_outside(V):
    with torch.inference_mode():
        x = inputs()[0]
    V(x).mul_(2)
    return {"x": x}


def _tangent(t):
    tangent = fwAD.unpack_dual(t).tangent
    return None if tangent is None else tangent.clone()


def fw_through_view(V):
    x0, t0 = inputs()
    with fwAD.dual_level():
        p, t = fwAD.unpack_dual(V(fwAD.make_dual(x0, t0)))
        return {"p": p.clone(), "t": t.clone(), "t is a view": t._is_view(), "t strides": t.stride() == p.stride()}


def fw_inplace_on_view_of_dual_base(V):
    x0, t0 = inputs()
    with fwAD.dual_level():
        x = fwAD.make_dual(x0, t0)
        v = V(x)
        v.mul_(3)
        return {"x_t": _tangent(x), "v_t": _tangent(v)}


def fw_dual_copied_into_view(V):
    x0, t0 = inputs()
    with fwAD.dual_level():
        base = x0.clone()
        V(base).copy_(fwAD.make_dual(V(x0).clone(), V(t0).clone()))
        return {"base_t": _tangent(base), "base": base.clone()}


def fw_base_overwritten_view_tangent(V):
    x0, t0 = inputs()
    with fwAD.dual_level():
        base = x0.clone()
        v = V(base)
        base.copy_(fwAD.make_dual(x0 * 2, t0))
        return {"v_t": _tangent(v)}


def fw_generated_inplace_on_view(V, mul_):
    x0, t0 = inputs()
    with fwAD.dual_level():
        x = fwAD.make_dual(x0, t0)
        mul_(V(x))
        return {"x_t": _tangent(x), "x": fwAD.unpack_dual(x).primal.clone()}


def fw_generated_inplace_on_view_of_plain_base(V, mul_):
    x0, t0 = inputs()
    with fwAD.dual_level():
        base = x0.clone()
        v = V(base)
        v.copy_(fwAD.make_dual(V(x0).clone(), V(t0).clone()))
        mul_(v)
        return {"base_t": _tangent(base)}


def base_and_is_view(V):
    x = inputs()[0]
    v = V(x)
    xr = inputs()[0].requires_grad_()
    vr = V(xr)
    return {"_base is x": v._base is x, "_is_view": v._is_view(),
            "storage shared": v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr(),
            "rg: _base is xr": vr._base is xr, "rg: _is_view": vr._is_view(), "rg: requires_grad": vr.requires_grad,
            "is_leaf": vr.is_leaf}


def replayed(fn):
    """fn under forced view replay (as AOTAutograd runs): the views keep their
    ViewFunc, which CopySlices and regenerated grad_fns then call."""
    def run(*args):
        with torch.autograd._force_original_view_tracking(True):
            return fn(*args)
    return run


def replayed_view_func(V):
    with torch.autograd._force_original_view_tracking(True):
        r = V(torch.zeros(*SHAPE, **D))._view_func(inputs()[0].requires_grad_())
        return {"replayed": r.detach(), "expected": V(inputs()[0]), "grad_fn": gname(r)}


def gradchecks(V):
    x = inputs()[0].requires_grad_()
    return {"gradcheck": torch.autograd.gradcheck(V, (x,), check_forward_ad=True, check_batched_grad=False),
            "gradgradcheck": torch.autograd.gradgradcheck(V, (x,))}


# ------------------------------------------------------------- list of views

def list_backward(op):
    x = inputs()[0].requires_grad_()
    b = x * 1.0
    vs = op(b)
    r = {"n": len(vs), "bases": all(v._base is b for v in vs), "grad_fns": [gname(v) for v in vs]}
    (vs[0] * 2 + vs[3]).sum().backward()
    r["grad"] = x.grad
    return r


def list_inplace(op, ip):
    vs = op(inputs()[0].requires_grad_() * 1.0)
    ip(vs[1])
    return {"v": vs[1].detach()}


def list_inplace_under_no_grad(op):
    b = inputs()[0]
    with torch.no_grad():
        op(b)[1].mul_(2)
    return {"b": b}


# -------------------------------------------------------------------- pairs

def pairs(m):
    """(label, ours, ATen's) for every scenario: 25 per mirror, 4 on the list."""
    ips = inplace_ops(m)
    mul_ = ips["mirror::mul_"]
    per_view = {
        "backward through the view": backward_through_view,
        "in-place on a view of a base in another graph (CopySlices)": None,
        "a view of a leaf without grad written with one that requires grad": inplace_into_view_of_plain_leaf,
        "the base modified in place after the view was taken": base_modified_after_view,
        "a view of a view, written in place": None,
        "a view made under no_grad, modified in place": no_grad_view_then_inplace,
        "a view made under no_grad, modified under no_grad": no_grad_view_inplace_under_no_grad,
        "inference mode: a normal tensor's view inside": inference_normal_tensor_inside,
        "inference mode: a view made inside modified outside": inference_view_modified_outside,
        "inference mode: an inference tensor's view, modified": inference_tensor,
        "inference mode: an inference tensor viewed outside": inference_tensor_viewed_outside,
        "inference mode: an inference tensor's view modified outside": inference_tensor_modified_outside,
        "forward AD through the view": fw_through_view,
        "forward AD: in-place on a view of a dual base": fw_inplace_on_view_of_dual_base,
        "forward AD: a dual copied into a view of a plain base": fw_dual_copied_into_view,
        "forward AD: the base overwritten by a dual, the view's tangent": fw_base_overwritten_view_tangent,
        "forward AD: mirror::mul_ on a view of a dual": lambda V: fw_generated_inplace_on_view(V, mul_),
        "forward AD: mirror::mul_ on a view of a plain base": lambda V: fw_generated_inplace_on_view_of_plain_base(
            V, mul_),
        "_base, _is_view(), the storage": base_and_is_view,
        "forced view replay: in-place on the view": replayed(lambda V: inplace_on_view(V, ips["mul_"])),
        "forced view replay: the base modified after the view": replayed(base_modified_after_view),
        "forced view replay: _view_func": replayed_view_func,
        "gradcheck and gradgradcheck (forward AD too)": gradchecks,
    }
    out = []
    for name, (ours, atens) in mirrors(m).items():
        for what, scenario in per_view.items():
            if scenario is None:  # one per in-place op
                each = inplace_on_view if what.startswith("in-place") else view_of_view
                for ip_name, ip in ips.items():
                    out.append((f"{name}: {what} ({ip_name})", lambda s=each, V=ours, ip=ip: s(V, ip),
                                lambda s=each, V=atens, ip=ip: s(V, ip)))
                continue
            out.append((f"{name}: {what}", lambda s=scenario, V=ours: s(V), lambda s=scenario, V=atens: s(V)))
    unbind = (lambda t: m.unbind.int(t), lambda t: t.unbind(0))
    out.append(("unbind: backward through two of the views", lambda: list_backward(unbind[0]),
                lambda: list_backward(unbind[1])))
    for ip_name, ip in ips.items():
        out.append((f"unbind: in-place on one of the views ({ip_name})", lambda ip=ip: list_inplace(unbind[0], ip),
                    lambda ip=ip: list_inplace(unbind[1], ip)))
    out.append(("unbind: in-place on one of the views under no_grad", lambda: list_inplace_under_no_grad(unbind[0]),
                lambda: list_inplace_under_no_grad(unbind[1])))
    return out
