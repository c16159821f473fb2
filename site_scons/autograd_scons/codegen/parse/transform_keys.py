"""`autocast:` and `vmap:` of an extension's op, checked against its schema
and located as its entry is parsed (the model: model/transforms.py; what
they generate: emit/op_kernels/autocast.py, emit/op_kernels/vmap.py).

    - func: myops::affine(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
      autocast: lower_precision_fp          # one policy for every device type,
      # autocast: {CPU: fp32, CUDA: lower_precision_fp}   # or one per device type
      vmap: pointwise                       # pointwise | leading_dims | {rule: NAME}

The policies are ATen's CastPolicy, by its names.  fp32_append_dtype
redispatches to another overload of the op (its arguments and a trailing
`ScalarType`), found once every entry is parsed: `resolve_redispatch`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Optional, Sequence

from autograd_scons.base.errors import SpecError
from ..model.extension_op import cpp_identifier, dispatcher_signature
from ..model.native import NativeFunction
from ..model.schema import OUT, Argument, FunctionSchema, is_tensor_like
from ..model.transforms import (FAKE_LIKE, FAKE_POINTWISE, FAKE_PYTHON, Fake, AUTOCAST_KEYS, FP32_APPEND_DTYPE, FP32_SET_OPT_DTYPE, KINDS, POLICIES, RULE,
                                Autocast, Redispatch, Vmap)
from .yaml_io import Entry

_TENSOR_ARGS = ("Tensor", "Tensor?")   # what the vmap plumbing unwraps (as torchgen's)
# The variables the generated code declares beside the op's arguments
# (templates/autocast_redispatch.cpp, op_lookup.cpp; vmap_plumbing.cpp,
# vmap_unwrap*.cpp, vmap_rule*.cpp, vmap_pointwise_*.cpp, vmap_leading_*.cpp),
# and for each tensor argument `x`: x_value, x_bdim, x_.
_AUTOCAST_LOCALS = frozenset({"op"})
_VMAP_LOCALS = frozenset({"op", "guard", "maybe_layer", "cur_level", "results", "rank", "batch", "sizes"})
_VMAP_SUFFIXES = ("_value", "_bdim", "_")


def parse_autocast(path: str, e: Entry, namespace: str, func: FunctionSchema,
                   returns_view: bool) -> Optional[Autocast]:
    raw = e.data.get("autocast")
    if raw is None:
        return None
    label = f"{namespace}::{func}"
    line = e.line_of("autocast")

    def err(msg: str, at: Optional[int] = None) -> SpecError:
        return SpecError(msg, path, at or line, label)
    devices = ", ".join(AUTOCAST_KEYS)
    if isinstance(raw, str):
        policies = [(d, raw) for d in AUTOCAST_KEYS]
    elif isinstance(raw, dict) and raw:
        policies = []
        for d, p in raw.items():
            if str(d) not in AUTOCAST_KEYS:
                raise err(f"unknown device type '{d}' under 'autocast' (the ones an extension builds kernels "
                          f"for: {devices})", e.line_of("autocast", str(d)))
            policies.append((str(d), p))
    else:
        raise err(f"'autocast' must be a policy ({', '.join(POLICIES)}) or a mapping of device types ({devices}) "
                  "to policies")
    for d, p in policies:
        if p not in POLICIES:
            raise err(f"unknown autocast policy {p!r} (ATen's: {', '.join(POLICIES)})",
                      e.line_of("autocast", d) if isinstance(raw, dict) else None)
    args = func.schema_order_arguments()
    written = [a.name for a in args if a.is_write]
    if written:
        raise err(f"an op that writes an argument ('{written[0]}') cannot have an autocast policy: autocast casts "
                  "copies of the inputs, so the write would land in a copy (ATen's policies are for out-of-place "
                  "ops only)")
    if returns_view:
        raise err("a view op cannot have an autocast policy: a cast input is a copy, so its output would no "
                  "longer be a view of the argument")
    if not any(is_tensor_like(a.type) for a in args):
        raise err("an autocast policy casts tensor arguments, and this op has none")
    _check_names([a.name for a in args], _AUTOCAST_LOCALS, "Autocast kernel", err)
    used = {p for _, p in policies}
    first = args[0] if args else None
    for p in used & {FP32_SET_OPT_DTYPE, FP32_APPEND_DTYPE}:
        if first is None or str(first.type) != "Tensor":
            raise err(f"{p} decides by the first argument, which must be a Tensor (as ATen's wrapper reads it)")
    if FP32_SET_OPT_DTYPE in used:
        opt = [a.name for a in args if str(a.type) == "ScalarType?"]
        if len(opt) != 1:
            raise err("fp32_set_opt_dtype sets the op's one 'ScalarType?' argument (the output dtype) to float32 "
                      f"when none is given: this op has {len(opt) or 'no'} such argument{'s' * (len(opt) > 1)}")
    order = list(AUTOCAST_KEYS)
    return Autocast(tuple(sorted(policies, key=lambda dp: order.index(dp[0]))), line)


def resolve_redispatch(funcs: Sequence[NativeFunction]) -> list[NativeFunction]:
    """`funcs` with each fp32_append_dtype policy given the overload it
    redispatches to: same namespace and name, this op's arguments (each of
    the same type, or its optional) and a trailing `ScalarType`, the same
    returns.  Exactly one must exist."""
    by_name: dict[tuple[str, str], list[NativeFunction]] = {}
    for f in funcs:
        by_name.setdefault((f.namespace, f.func.name.name), []).append(f)
    out = []
    for f in funcs:
        ac = f.autocast
        if ac is None or FP32_APPEND_DTYPE not in {p for _, p in ac.policies}:
            out.append(f)
            continue
        targets = [g for g in by_name[(f.namespace, f.func.name.name)] if g is not f and _appends_dtype(f.func, g.func)]
        label = f"{f.namespace}::{f.func}"
        if len(targets) != 1:
            found = "none in this file" if not targets else \
                "several: " + ", ".join(f"'{g.func.name}' (line {g.line})" for g in targets)
            raise SpecError(f"fp32_append_dtype redispatches to the overload of '{f.namespace}::{f.func.name.name}' "
                            "that takes this op's arguments and a trailing 'ScalarType' (as ATen's norm.Scalar to "
                            f"norm.ScalarOpt_dtype): {found}", f.file, ac.line, label)
        g = targets[0]
        ret, params = dispatcher_signature(g)
        out.append(dataclasses.replace(f, autocast=dataclasses.replace(
            ac, redispatch=Redispatch(g.func.name.overload, ret, tuple(params), g.func.schema_order_arguments()[-1].name))))
    return out


def _appends_dtype(f: FunctionSchema, g: FunctionSchema) -> bool:
    a, b = f.schema_order_arguments(), g.schema_order_arguments()
    if len(b) != len(a) + 1 or str(b[-1].type) != "ScalarType" or [str(r.type) for r in f.returns] != \
            [str(r.type) for r in g.returns]:
        return False
    return all(x.name == y.name and str(y.type) in (str(x.type), f"{x.type}?") for x, y in zip(a, b))


def parse_vmap(path: str, e: Entry, namespace: str, func: FunctionSchema) -> Optional[Vmap]:
    raw = e.data.get("vmap")
    if raw is None:
        return None
    label = f"{namespace}::{func}"
    line = e.line_of("vmap")

    def err(msg: str) -> SpecError:
        return SpecError(msg, path, line, label)
    if isinstance(raw, str) and raw in KINDS:
        v = Vmap(raw, None, line)
    elif isinstance(raw, dict) and set(raw) == {"rule"}:
        name = raw["rule"]
        if not isinstance(name, str) or not cpp_identifier(name):
            raise err(f"'rule' must name a batch rule in {namespace}::native (a C++ identifier), not {name!r}")
        v = Vmap(RULE, name, line)
    else:
        raise err(f"'vmap' must be a kind of batch rule ({', '.join(KINDS)}) or '{{rule: NAME}}' (a batch rule "
                  f"written in {namespace}::native), not {raw!r}")
    _check_vmap(func, err)
    names = [a.name for a in func.schema_order_arguments()]
    tensors = [a.name for a in func.schema_order_arguments() if is_tensor_like(a.type)]
    _check_names(names, _VMAP_LOCALS | {t + s for t in tensors for s in _VMAP_SUFFIXES}, "vmap plumbing", err)
    return v


_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


def parse_fake(path: str, e: Entry, namespace: str, func: FunctionSchema) -> Optional[Fake]:
    """`fake:` (the stable target's fake kernel): `pointwise`, `{like: ARG}`
    or `{python: module.function}`."""
    raw = e.data.get("fake")
    if raw is None:
        return None
    line = e.line_of("fake")

    def err(msg: str) -> SpecError:
        return SpecError(msg, path, line, f"{namespace}::{func}")
    tensors = [a.name for a in func.schema_order_arguments() if str(a.type) == "Tensor"]
    if raw == FAKE_POINTWISE:
        if not tensors:
            raise err("'fake: pointwise' gives the outputs the tensor inputs' broadcast shape, and this op has none")
        return Fake(FAKE_POINTWISE, None, line)
    if isinstance(raw, dict) and len(raw) == 1 and FAKE_LIKE in raw:
        if raw[FAKE_LIKE] not in tensors:
            raise err(f"'fake: {{like: ARG}}' names a Tensor argument of the op ({', '.join(tensors) or 'none'}), "
                      f"not {raw[FAKE_LIKE]!r}")
        return Fake(FAKE_LIKE, raw[FAKE_LIKE], line)
    if isinstance(raw, dict) and len(raw) == 1 and FAKE_PYTHON in raw:
        if not isinstance(raw[FAKE_PYTHON], str) or not _DOTTED.fullmatch(raw[FAKE_PYTHON]):
            raise err(f"'fake: {{python: NAME}}' names a Python function as module.function, not "
                      f"{raw[FAKE_PYTHON]!r}")
        return Fake(FAKE_PYTHON, raw[FAKE_PYTHON], line)
    raise err(f"'fake' must be '{FAKE_POINTWISE}', '{{{FAKE_LIKE}: ARG}}' or '{{{FAKE_PYTHON}: module.function}}', "
              f"not {raw!r}")


def _check_names(names: Sequence[str], taken: frozenset | set, where: str, err: Callable[..., SpecError]) -> None:
    clash = next((n for n in names if n in taken), None)
    if clash is not None:
        raise err(f"argument '{clash}' is also the name of a variable of the generated {where}: rename it, e.g. "
                  f"to '{clash}_arg', in its schema (and in its derivatives entry)")


def _check_vmap(func: FunctionSchema, err: Callable[[str], SpecError]) -> None:
    """What the plumbing can batch: as torchgen's, Tensor and Tensor?
    arguments unwrapped, tensor returns wrapped, one argument written in
    place (the first)."""
    args = func.schema_order_arguments()
    tensors = [a for a in args if is_tensor_like(a.type)]
    if not tensors:
        raise err("vmap batches tensor arguments, and this op has none")
    lists = [a.name for a in tensors if str(a.type) not in _TENSOR_ARGS]
    if lists:
        raise err(f"the vmap plumbing unwraps Tensor and Tensor? arguments, not '{lists[0]}' (a list, as "
                  "torchgen's plumbing leaves them): leave out 'vmap:' to keep functorch's fallback")
    if func.kind() == OUT:
        raise err("vmap does not batch an out= op (functorch refuses them, ATen's included): call the functional "
                  "op under vmap, and leave out 'vmap:' here")
    written = [a for a in args if a.is_write]
    if written and (len(written) > 1 or written[0] is not args[0] or str(args[0].type) != "Tensor"):
        raise err("under vmap an op may write its first argument only (a Tensor, in place: as ATen's in-place ops "
                  f"are batched); this one writes '{_names(written)}'")
    bad = [str(r.type) for r in func.returns if str(r.type) not in ("Tensor", "Tensor[]")]
    if bad:
        raise err(f"the vmap plumbing wraps tensor results (Tensor, Tensor[]), not '{bad[0]}'")


def _names(args: Sequence[Argument]) -> str:
    return "', '".join(a.name for a in args)
