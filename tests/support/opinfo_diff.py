"""PyTorch's own OpInfo samples through autograd, every result kept as a
digest: one side of the patch differential (tests/torch_patch/test_patch_opinfo.py).
Run in a child process, with or without a patch preloaded:

    python -m support.opinfo_diff OUT.jsonl [--ops NAME,...] [--compiled-every K] [--shard I/N] [--forward-ad]

For every OpInfo of `op_db` (and of the `_foreach_*` ops' lists beside
it) that supports autograd on CPU, in float64 and
in complex128 where the op supports it, and for each of its samples: the
forward, the first-order gradients against seeded cotangents, the
second-order ones where the OpInfo supports gradgrad, and, for every K-th
op, the first-order gradients again under compiled autograd (so that the
Functions' `compiled_args` and `apply_with_saved` run), and with
`--forward-ad`, for the ops that support it, the outputs' tangents with
seeded tangents on every differentiable input (dual tensors: the Autograd
kernels' forward formulas run).  One JSON line per
sample: each result's digest (dtype, shape, bytes with NaNs by position)
or its error (type and first line), and the names of the autograd nodes
its graphs reached.  Seeds depend on the op, dtype and sample alone, and
one thread computes, so two runs of one torch give the same lines.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
import zlib


# The OpInfo lists of the `_foreach_*` ops, beside op_db (whose ops create
# none of torch's Foreach Functions).
FOREACH = ("foreach_unary_op_db", "foreach_binary_op_db", "foreach_pointwise_op_db", "foreach_reduce_op_db",
           "foreach_other_op_db")


def _seed(*parts) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


def digest(t) -> str:
    """dtype, shape and bytes of `t`, NaNs compared by position only."""
    import torch
    if not isinstance(t, torch.Tensor):
        return repr(t)
    v = t.detach()
    if v.layout != torch.strided:
        v = v.to_dense()
    v = v.resolve_conj().resolve_neg().contiguous().cpu()
    head = f"{v.dtype}{tuple(v.shape)}".encode()
    if v.is_complex():
        v = torch.view_as_real(v)
    if v.is_floating_point():
        nan = torch.isnan(v)
        v = v.masked_fill(nan, 0)
        head += bytes(nan.flatten().to(torch.uint8).tolist()) if nan.any() else b""
    raw = v.flatten().view(torch.uint8) if v.numel() and v.dtype != torch.bool else v.flatten().to(torch.uint8)
    return hashlib.sha256(head + bytes(raw.numpy().tobytes())).hexdigest()[:32]


def _copy(x):
    """A copy of an input (a tensor or a list of them) to modify in place."""
    return [t.clone() for t in x] if isinstance(x, (list, tuple)) else x.clone()


def _error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else ''}"


def _leaves(tree):
    from torch.utils._pytree import tree_leaves
    return tree_leaves(tree)


def _differentiable(tensors):
    import torch
    return [t for t in tensors if isinstance(t, torch.Tensor) and t.requires_grad
            and (t.is_floating_point() or t.is_complex())]


def _reached(tensors) -> set:
    """The classes of the autograd nodes reachable from `tensors`' grad_fns."""
    seen, names, stack = set(), set(), [t.grad_fn for t in tensors if t.grad_fn is not None]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        names.add(fn.name())   # (the class's own: a Function without Python bindings is a CppFunction there)
        stack.extend(f for f, _ in fn.next_functions)
    return names


def _cotangents(outs, seed):
    import torch
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(o.shape, dtype=o.dtype, generator=g) for o in outs]


def _forward_ad(op, fn, sample, key):
    """The outputs' tangents, every differentiable input made a dual tensor
    with a seeded tangent: digests, or the error."""
    import torch
    import torch.autograd.forward_ad as fwAD
    from torch.utils._pytree import tree_map
    g = torch.Generator().manual_seed(_seed(key, "t"))

    def dual(x):
        if isinstance(x, torch.Tensor) and x.requires_grad and (x.is_floating_point() or x.is_complex()):
            return fwAD.make_dual(x.detach(), torch.randn(x.shape, dtype=x.dtype, generator=g))
        return x
    try:
        with fwAD.dual_level():
            inp, args, kwargs = tree_map(dual, (sample.input, sample.args, sample.kwargs))
            out = op.gradcheck_wrapper(fn, inp, *args, **kwargs)
            outs = [t for t in _leaves(sample.output_process_fn_grad(out)) if isinstance(t, torch.Tensor)]
            tangents = [fwAD.unpack_dual(t).tangent for t in outs]
            return [digest(t) if t is not None else None for t in tangents]
    except Exception as e:
        return _error(e)


def run_sample(op, variant, dtype, index, sample, compiled: bool, forward_ad: bool = False) -> dict:
    """One sample through `variant` ("" for the function, "inplace" for the
    in-place variant on a copy of the input, as test_ops does)."""
    import torch
    key = f"{op.full_name}|{variant}|{dtype}|{index}"
    rec = {"key": key, "op": op.full_name}
    torch.manual_seed(_seed(key))
    fn = op.get_op()
    if variant == "inplace":
        inplace = op.get_inplace()
        fn = lambda x, *a, **k: inplace(_copy(x), *a, **k)  # noqa: E731 (not on a leaf)
    try:
        out = op.gradcheck_wrapper(fn, sample.input, *sample.args, **sample.kwargs)
        outs = _differentiable(_leaves(sample.output_process_fn_grad(out)))
        rec["forward"] = [digest(t) for t in _leaves(out) if isinstance(t, torch.Tensor)]
    except Exception as e:  # the same error on both sides is agreement
        rec["forward"] = _error(e)
        return rec
    ins = _differentiable(_leaves((sample.input, sample.args, sample.kwargs)))
    reached = _reached(outs)
    if outs and ins:
        cots = _cotangents(outs, _seed(key, "v"))
        try:
            grads = torch.autograd.grad(outs, ins, cots, allow_unused=True, create_graph=op.supports_gradgrad)
            rec["grad"] = [digest(g) if g is not None else None for g in grads]
        except Exception as e:
            rec["grad"] = _error(e)
            grads = ()
        again = [g for g in grads if g is not None and g.requires_grad]
        if op.supports_gradgrad and again:
            reached |= _reached(again)
            try:
                second = torch.autograd.grad(again, ins, _cotangents(again, _seed(key, "w")), allow_unused=True)
                rec["gradgrad"] = [digest(g) if g is not None else None for g in second]
            except Exception as e:
                rec["gradgrad"] = _error(e)
        if compiled:
            rec["compiled"] = _compiled_grads(outs, ins, cots)
    rec["reached"] = sorted(reached)
    if forward_ad and op.supports_forward_ad:
        rec["forward_ad"] = _forward_ad(op, fn, sample, key)
    return rec


def _compiled_grads(outs, ins, cots):
    """The first-order gradients through compiled autograd: its graph is
    built from each node's compiled_args and apply_with_saved."""
    import torch
    from torch._dynamo import compiled_autograd
    if not all(t.is_leaf for t in ins):
        return "not all inputs are leaves"
    for t in ins:
        t.grad = None
    try:
        with compiled_autograd._enable(lambda gm: gm):
            torch.autograd.backward(outs, cots)
        return [digest(t.grad) if t.grad is not None else None for t in ins]
    except Exception as e:
        return _error(e)
    finally:
        torch._dynamo.reset()


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--ops", default="", help="comma-separated OpInfo full names (default: all)")
    p.add_argument("--compiled-every", type=int, default=0, help="compiled autograd on every K-th op (0: none)")
    p.add_argument("--shard", default="0/1", help="I/N: the I-th of N interleaved parts of the ops")
    p.add_argument("--part", default="0/1", help="K/N: only the ops whose index is K modulo N (a CI run's "
                                                   "share, support/proof_share.py), then sharded")
    p.add_argument("--also", default="", help="comma-separated OpInfo names run whatever the part")
    p.add_argument("--forward-ad", action="store_true", help="also the outputs' tangents through dual tensors")
    args = p.parse_args(argv)
    shard, shards = map(int, args.shard.split("/"))
    part, parts = map(int, args.part.split("/"))
    also = set(filter(None, args.also.split(",")))
    warnings.simplefilter("ignore")
    import torch
    torch.set_num_threads(1)
    from torch.testing._internal import common_methods_invocations as db
    wanted = set(filter(None, args.ops.split(",")))
    ops = [o for o in db.op_db + [f for group in FOREACH for f in getattr(db, group)]
           if o.supports_autograd and torch.float64 in o.supported_dtypes("cpu")
           and (not wanted or o.full_name in wanted)]
    import autograd_scons
    patched = sorted(autograd_scons.patched_functions())
    # (the part picks by the op's index in the whole list, so that the parts
    # of successive runs cover every op; the shards then split the part)
    ops_in_part = [(n, op) for n, op in enumerate(ops) if n % parts == part or op.full_name in also]
    with open(args.out, "w") as f:
        f.write(json.dumps({"patched": patched, "torch": torch.__version__}) + "\n")
        for i, (n, op) in enumerate(ops_in_part):
            if i % shards != shard:
                continue
            dtypes = [torch.float64] + ([torch.complex128] if torch.complex128 in op.supported_dtypes("cpu") else [])
            for dtype in dtypes:
                torch.manual_seed(_seed(op.full_name, dtype))
                try:
                    samples = list(op.sample_inputs("cpu", dtype, requires_grad=True))
                except Exception as e:
                    f.write(json.dumps({"key": f"{op.full_name}|{dtype}|samples", "op": op.full_name,
                                        "forward": _error(e)}) + "\n")
                    continue
                variants = [""] + (["inplace"] if op.get_inplace() is not None and op.supports_inplace_autograd
                                   else [])
                for variant in variants:
                    for i, s in enumerate(samples):
                        compiled = bool(args.compiled_every) and n % args.compiled_every == 0 and i == 0 \
                            and dtype == torch.float64 and not variant
                        f.write(json.dumps(run_sample(op, variant, dtype, i, s, compiled, args.forward_ad)) + "\n")
            f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ------------------------------------------------------------- comparing runs

RESULTS = ("forward", "grad", "gradgrad", "compiled", "forward_ad")
GRADIENTS = ("grad", "gradgrad", "compiled", "forward_ad")


def read_run(path: str) -> tuple[dict, dict]:
    """(header, {sample key: record}) of a run's file."""
    with open(path) as f:
        lines = f.read().splitlines()
    return json.loads(lines[0]), {r["key"]: r for r in map(json.loads, lines[1:])}


def differing_ops(a: dict, b: dict) -> set:
    """The ops with a sample whose results differ between two runs' records."""
    return {r["op"] for k, r in a.items() if k not in b or any(r.get(x) != b[k].get(x) for x in RESULTS)} | \
        {r["op"] for k, r in b.items() if k not in a}


def counts(records: dict, leave_out=frozenset()) -> dict:
    """What a run compared: ops, samples, gradients (first, second order, compiled)."""
    kept = [r for r in records.values() if r["op"] not in leave_out]
    grads = sum(len(r[x]) for r in kept for x in GRADIENTS if isinstance(r.get(x), list))
    return {"ops": len({r["op"] for r in kept}), "samples": len(kept), "gradients": grads}


def ops_reaching(records: dict, name: str) -> set:
    return {r["op"] for r in records.values() if name in r.get("reached", ())}


def equal_gradients(a: dict, b: dict, leave_out=frozenset()) -> int:
    """How many of a's gradients b has the same (position by position)."""
    same = 0
    for k, r in a.items():
        other = b.get(k, {})
        if r["op"] in leave_out:
            continue
        for x in GRADIENTS:
            mine, theirs = r.get(x), other.get(x)
            if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
                same += sum(1 for m, t in zip(mine, theirs) if m == t)
    return same
