"""One side of formula_diff: each recorded call of an op with translated
formulas, libtorch's gradient against the Python formulas' (see
formula_diff's docstring), and the summary line."""

from __future__ import annotations

import math
import zlib
from collections import defaultdict

from autograd_scons.codegen.formula import torch_helpers as H
from autograd_scons.codegen.model.autograd import differentiable_outputs
from autograd_scons.codegen.model.cpp import return_names

from .formula_diff import record_calls, translations

RTOL, ATOL = 1e-3, 1e-5   # gradcheck's defaults


class Skip(Exception):
    """The case cannot be run on libtorch's side (its own error)."""


def _bind(overload, args, kwargs) -> dict:
    values = {}
    for i, a in enumerate(overload._schema.arguments):
        if i < len(args):
            values[a.name] = args[i]
        elif a.name in kwargs:
            values[a.name] = kwargs[a.name]
        elif a.has_default_value():
            values[a.name] = a.default_value
        else:
            raise Skip(f"argument {a.name} missing")
    return values


def _call(overload, values):
    pos = [values[a.name] for a in overload._schema.arguments if not a.kwarg_only]
    kw = {a.name: values[a.name] for a in overload._schema.arguments if a.kwarg_only}
    return overload(*pos, **kw)


def _differentiable(t) -> bool:
    import torch
    return isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())


def _leaf(x):
    import torch
    if isinstance(x, (list, tuple)):
        return [_leaf(t) for t in x]
    return x.detach().clone().requires_grad_() if _differentiable(x) else x


def _same(a, b) -> tuple[bool, bool]:
    """(bitwise, within gradcheck's tolerance) of libtorch's `a` and the formula's `b`."""
    import torch
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not isinstance(a, (list, tuple)) or not isinstance(b, (list, tuple)) or len(a) != len(b):
            return False, False
        pairs = [_same(x, y) for x, y in zip(a, b)]
        return all(p[0] for p in pairs), all(p[1] for p in pairs)
    if a is None or b is None:
        other = b if a is None else a
        zero = other is None or (isinstance(other, torch.Tensor) and not other.any())
        return zero, zero
    if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False, False
    a, b = a.detach(), b.detach()
    if a.layout != torch.strided or b.layout != torch.strided:
        a, b = a.to_dense(), b.to_dense()
    if a.is_complex():
        a, b = torch.view_as_real(a.resolve_conj()), torch.view_as_real(b.resolve_conj())
    nan = torch.isnan(a) & torch.isnan(b)
    bitwise = bool(((a == b) | nan).all())
    close = bitwise or bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))
    return bitwise, close


def _engine(grad, like):
    """What autograd's engine makes of a Function's gradient for an input
    (validate_outputs, for C++ and Python Functions alike): summed to the
    input's shape where it broadcast, cast to its dtype."""
    import torch
    if isinstance(like, list):
        return [_engine(g, t) for g, t in zip(grad, like)] if isinstance(grad, (list, tuple)) else grad
    if not isinstance(grad, torch.Tensor) or not isinstance(like, torch.Tensor):
        return grad
    if grad.shape != like.shape and grad.layout == torch.strided:
        grad = H.sum_to(grad, like.shape)
    if grad.dtype != like.dtype and not (grad.is_complex() and not like.is_complex()):
        grad = grad.to(like.dtype)
    return grad


def compare_case(info, formulas, overload, args, kwargs, seed, inplace=False, source=None):
    """Run one recorded call (of `source`, `overload` itself if None): each
    formula's (bitwise, close, error) or Skip."""
    import torch
    values = _convert(overload, _bind(source or overload, args, kwargs))
    diff_args = {b.name for b in info.args_with_derivatives}
    leaves = {n: _leaf(v) for n, v in values.items() if n in diff_args}
    try:
        if inplace:   # on a copy of self (not a leaf), as test_ops does
            first = overload._schema.arguments[0].name
            out = _call(overload, {**values, **leaves, first: leaves.get(first, values[first]).clone()})
        else:
            out = _call(overload, {**values, **leaves})
    except Exception as e:
        raise Skip(f"libtorch: {type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}")
    rets = list(out) if isinstance(out, tuple) else [out]
    ret_names = [n if n != "self" else "result" for n in return_names(info.func.func)]
    diff_names = {o.name for o in differentiable_outputs(info)}
    g = torch.Generator().manual_seed(seed)
    flat_outs, flat_cots, per_name, grads = [], [], {}, []
    for name, r in zip(ret_names, rets):
        items = r if isinstance(r, (list, tuple)) else [r]
        cots = []
        for t in items:
            c = None
            if name in diff_names and _differentiable(t) and t.requires_grad:
                c = torch.randn(t.shape, dtype=t.dtype, generator=g)
                flat_outs.append(t)
                flat_cots.append(c)
            cots.append(c)
        grads.extend(cots)
        per_name[name] = cots if isinstance(r, (list, tuple)) else cots[0]
    flat_leaves = [t for v in leaves.values() for t in (v if isinstance(v, list) else [v])
                   if isinstance(t, torch.Tensor) and t.requires_grad]
    if not flat_outs or not flat_leaves:
        raise Skip("nothing differentiable")
    try:
        lib = torch.autograd.grad(flat_outs, flat_leaves, flat_cots, allow_unused=True)
    except Exception as e:
        raise Skip(f"libtorch backward: {type(e).__name__}")
    it = iter(lib)
    lib_of = {}
    for n, v in leaves.items():
        if isinstance(v, list):
            lib_of[n] = [next(it) if isinstance(t, torch.Tensor) and t.requires_grad else None for t in v]
        elif isinstance(v, torch.Tensor) and v.requires_grad:
            lib_of[n] = next(it)
    plain = {n: (v.detach() if isinstance(v, torch.Tensor) else
                 [t.detach() if isinstance(t, torch.Tensor) else t for t in v] if isinstance(v, list) else v)
             for n, v in values.items()}
    outputs = {n: (r.detach() if isinstance(r, torch.Tensor) else
                   [t.detach() for t in r] if isinstance(r, (list, tuple)) else r)
               for n, r in zip(ret_names, rets)}
    results = []
    for f in formulas:
        try:
            env = {**plain, **outputs}
            for name, py in f.saved.items():
                env[name] = eval(py, {"torch": torch, "math": math, "H": H}, dict(env))
            first = next((c for c in grads if c is not None), None)
            env.update(grad=grads[0] if grads else first, grads=grads,
                       grad_input_mask=[n in lib_of for n in f.var_names], retain_variables=True)
            env.update({f"grad_{n}": c for n, c in per_name.items()})
            got = eval(f.python, {"torch": torch, "math": math, "H": H}, env)
            got = (got,) if len(f.var_names) == 1 else tuple(got)
            checks = [_same(lib_of.get(n), _engine(r, leaves[n])) for n, r in zip(f.var_names, got) if n in lib_of]
            if not checks:
                results.append((f, None, None, "no gradient to compare"))
                continue
            results.append((f, all(c[0] for c in checks), all(c[1] for c in checks), ""))
        except Exception as e:
            results.append((f, False, False, f"{type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}"))
    return results


def _overload(name: str):
    import torch
    base, _, ov = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), ov or "default")


def _source(name: str, calls: dict):
    """The recorded calls that give `name`'s arguments: its own; a view
    copy's (`alias_copy`), its view's; an in-place op's (`eq_.Scalar`), its
    functional twin's; an overload's that OpInfo does not call
    (`xlogy.Scalar_Self`), a sibling's with the same argument names (its
    tensors' first element where a Scalar is wanted)."""
    if name in calls:
        return name
    base, dot, ov = name.partition(".")
    bases = [base] + [b for b in (base[: -len("_copy")] if base.endswith("_copy") else None,
                                  base[:-1] if base.endswith("_") else None) if b is not None]
    for b in bases[1:]:
        if b + dot + ov in calls:
            return b + dot + ov
    try:
        want = [a.name for a in _overload(name)._schema.arguments]
    except (AttributeError, RuntimeError):
        return None
    for b in bases:
        for other in sorted(c for c in calls if c.partition(".")[0] == b):
            if sorted(a.name for a in _overload(other)._schema.arguments) == sorted(want):
                return other
    return None


def _convert(overload, values: dict) -> dict:
    """values bound by name, made the types `overload` takes (a sibling's
    Tensor for a Scalar: its first element)."""
    import torch
    out = dict(values)
    for a in overload._schema.arguments:
        v, t = values.get(a.name), str(a.type)
        if t in ("Scalar", "number") and isinstance(v, torch.Tensor):
            if v.numel() == 0 or v.is_complex():
                raise Skip("no scalar for a Scalar argument")
            out[a.name] = v.flatten()[0].item()
        elif t == "Tensor" and not isinstance(v, torch.Tensor):
            raise Skip("a number for a Tensor argument")
    return out


def run(op_names=(), samples_per_op=2):
    """(the summary line, detail lines)."""
    import torch
    torch.set_num_threads(1)
    infos, formulas, table = translations(H.HELPERS)
    by_op = defaultdict(list)
    for f in formulas:
        by_op[(f.op, f.func)].append(f)
    calls = record_calls(op_names or None, samples_per_op)
    skipped = defaultdict(int)
    for info in infos:
        if info.dispatch_key != "Default":
            continue
        name = str(info.func.func.name)
        mine = [f for f in by_op[(info.op, name)] if f.python is not None and not f.python.startswith("H.not_impl")]
        source = _source(name, calls)
        if not mine or source is None:
            continue
        overload = _overload(name)
        for k, (args, kwargs) in enumerate(calls[source]):
            try:
                results = compare_case(info, mine, overload, args, kwargs, zlib.crc32(f"{name}|{k}".encode()),
                                       inplace=info.func.func.name.inplace, source=_overload(source))
            except Skip as e:
                skipped[f"{name}: {e}"] += 1
                continue
            for f, bitwise, close, err in results:
                if bitwise is None:
                    continue
                f.compared += 1
                f.bitwise += bool(bitwise)
                f.close += bool(close)
                if not close:
                    f.failures.append(err or "differs")
    translated = [f for f in formulas if f.python is not None]
    compared = [f for f in translated if f.compared]
    bitwise = [f for f in compared if f.bitwise == f.compared]
    close = [f for f in compared if f.close == f.compared]
    line = (f"torch's backward formulas: {len(formulas)}, translated {len(translated)}, compared {len(compared)}, "
            f"equal bitwise {len(bitwise)}, equal within tolerance {len(close)}")
    lines = [f"UNTRANSLATED {f.op} {f.var_names} (derivatives.yaml:{f.line}): {f.refused}"
             for f in formulas if f.python is None]
    lines += [f"DIFFERS {f.op} {f.var_names}: {f.python}  [{'; '.join(sorted(set(f.failures)))}]"
              for f in compared if f.close != f.compared]
    lines += [f"TOLERANCE {f.op} {f.var_names}" for f in compared if f.close == f.compared and f.bitwise != f.compared]
    lines += [f"NOT COMPARED {f.op} {f.var_names}" for f in translated if not f.compared]
    lines += [f"SKIPPED {n} calls: {why}" for why, n in sorted(skipped.items())]
    return line, lines, {"infos": infos, "table": table, "calls": calls,
                         "formulas": formulas, "translated": translated, "compared": compared,
                         "bitwise": bitwise, "close": close}
