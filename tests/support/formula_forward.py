"""The forward side of the translator's proof: each translated forward
formula (`result: ...`, auto_linear/auto_element_wise expanded) against
libtorch's own forward AD (dual tensors) on the calls formula_diff records,
every differentiable input with a seeded random tangent."""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from dataclasses import dataclass, field

from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.formula import torch_helpers as H
from autograd_scons.codegen.formula.derivatives import output_types, translate_forward

from .formula_compare import Skip, _bind, _convert, _differentiable, _overload, _same, _source


@dataclass
class Forward:
    op: str
    var_names: tuple
    python: str = ""
    refused: str = ""
    compared: int = 0
    bitwise: int = 0
    close: int = 0
    failures: list = field(default_factory=list)


def _tangent(x, g):
    import torch
    if isinstance(x, (list, tuple)):
        return [_tangent(t, g) for t in x]
    return torch.randn(x.shape, dtype=x.dtype, generator=g) if _differentiable(x) else None


def compare_forward(info, forwards, overload, source, args, kwargs, seed):
    import torch
    import torch.autograd.forward_ad as fwAD
    values = _convert(overload, _bind(source, args, kwargs))
    g = torch.Generator().manual_seed(seed)
    diff = {b.name for b in info.args_with_derivatives}
    tangents = {n: _tangent(v, g) for n, v in values.items() if n in diff}
    names = list(output_types(info))
    try:
        with fwAD.dual_level():
            def dual(n, v):
                t = tangents.get(n)
                if isinstance(v, (list, tuple)):
                    return [fwAD.make_dual(x, y) if y is not None else x for x, y in zip(v, t or [None] * len(v))]
                return fwAD.make_dual(v, t) if t is not None else v
            out = overload(*[dual(a.name, values[a.name]) for a in overload._schema.arguments if not a.kwarg_only],
                           **{a.name: dual(a.name, values[a.name]) for a in overload._schema.arguments if a.kwarg_only})
            rets = list(out) if isinstance(out, tuple) else [out]
            def part(r, what):
                if isinstance(r, (list, tuple)):
                    return [part(x, what) for x in r]
                if not isinstance(r, torch.Tensor):
                    return None if what == "tangent" else r
                u = fwAD.unpack_dual(r)
                return u.tangent if what == "tangent" else u.primal.detach()
            lib = {n: part(r, "tangent") for n, r in zip(names, rets)}
            primal = {n: part(r, "primal") for n, r in zip(names, rets)}
    except Exception as e:
        raise Skip(f"libtorch forward AD: {type(e).__name__}")
    env = {**values, **primal}
    for n, v in values.items():
        env[f"{n}_p"] = v
        t = tangents.get(n)
        env[f"{n}_t"] = t if t is not None or not isinstance(v, torch.Tensor) else torch.zeros_like(v)
    results = []
    for f in forwards:
        try:
            got = eval(f.python, {"torch": torch, "math": math, "H": H}, dict(env))
            got = (got,) if len(f.var_names) == 1 else tuple(got)
            # an output of a type without gradients (`x.to(torch.int64)`:
            # _to_copy's output_differentiability condition) gets no tangent
            checks = [_same(lib.get(n), r) for n, r in zip(f.var_names, got)
                      if not isinstance(primal.get(n), torch.Tensor) or _differentiable(primal[n])]
            if not checks:
                continue
            results.append((f, all(c[0] for c in checks), all(c[1] for c in checks), ""))
        except Exception as e:
            results.append((f, False, False, f"{type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}"))
    return results


def run_forward(infos, table, calls):
    """(line, detail lines) of the forward formulas over the recorded calls."""
    forwards = []
    by_info = defaultdict(list)
    for info in infos:
        for fd in info.forward_derivatives:
            f = Forward(info.op, fd.var_names)
            try:
                f.python = translate_forward(info, fd, helpers=H.HELPERS, functions=table, helper_prefix="H.")
            except SpecError as e:
                f.refused = e.message
            forwards.append(f)
            if f.python and info.dispatch_key == "Default" and not info.func.func.name.inplace:
                by_info[id(info)].append(f)
    for info in infos:
        mine = by_info.get(id(info))
        name = str(info.func.func.name)
        source = _source(name, calls) if mine else None
        if source is None:
            continue
        overload = _overload(name)
        for k, (args, kwargs) in enumerate(calls[source]):
            try:
                results = compare_forward(info, mine, overload, _overload(source), args, kwargs,
                                          zlib.crc32(f"{name}|fw|{k}".encode()))
            except Skip:
                continue
            for f, bitwise, close, err in results:
                f.compared += 1
                f.bitwise += bool(bitwise)
                f.close += bool(close)
                if not close:
                    f.failures.append(err or "differs")
    translated = [f for f in forwards if f.python]
    compared = [f for f in translated if f.compared]
    line = (f"torch's forward formulas: {len(forwards)}, translated {len(translated)}, compared {len(compared)}, "
            f"equal bitwise {sum(f.bitwise == f.compared for f in compared)}, "
            f"equal within tolerance {sum(f.close == f.compared for f in compared)}")
    lines = [f"FORWARD UNTRANSLATED {f.op} {f.var_names}: {f.refused}" for f in forwards if not f.python]
    lines += [f"FORWARD DIFFERS {f.op} {f.var_names}: {f.python}  [{'; '.join(sorted(set(f.failures)))}]"
              for f in compared if f.close != f.compared]
    return line, lines, {"forwards": forwards, "translated": translated, "compared": compared}
