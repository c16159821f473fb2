"""An extension op under vmap (`vmap:`, parsed by parse/transform_keys.py):
the plumbing torchgen generates for ATen's ops (gen_vmap_plumbing.py), for
the op's TU, registered for FuncTorchBatched.  Under vmap the plumbing
unwraps each tensor batched at the current level into its value and batch
dimension (functorch's exported `unwrapTensorAtLevel`), calls the batch
rule with ATen's signature (model/extension_op.py) and wraps each result
(`makeBatched`); with nothing batched at this level it calls the op again
below FuncTorchBatched.  Nested vmap, vmap(grad), jacrev, jacfwd and
hessian reach it through functorch's layers, as they reach ATen's.

The rule is the extension's (`{rule: NAME}`, in `<ns>::native`), or one the
tool writes here by kind, calling the op itself below FuncTorchBatched on
the physical tensors, every result batched along its first dimension:

- `pointwise`: a broadcasting op (ATen's BINARY_POINTWISE, POINTWISE_BOXED):
  each batched tensor's batch dimension moved first and padded after it to
  the largest logical rank; an unbatched tensor broadcasts as it is;
- `leading_dims`: a kernel that treats the leading dimensions its tensors
  share as batch dimensions (ATen's VARIADIC_BDIMS): each batched tensor's
  batch dimension moved first, an unbatched one given it (expanded: no copy).

functorch's own helpers for these (moveBatchDimToFront,
maybePadToLogicalRank) are not exported by libtorch, so the rules use
`movedim`, `unsqueeze` and `expand`, which give the same views.

An op that writes its first argument in place is batched only when that
argument is batched wherever another one is: otherwise the plumbing refuses
in one line naming the op (as ATen's in-place rules do).

The current level is functorch's (`maybeCurrentDynamicLayer`, as torchgen's
plumbing reads it), from ATen/functorch/DynamicLayer.h, which includes
<nlohmann/json.hpp> through Interpreter.h; torch's wheel does not ship that
header (pytorch/pytorch#181565), so the output folder (on the include path
of whatever compiles the tree) gets one (`render_json_shim`,
templates/json_shim.h), written by the engine where an op has `vmap:`.
Reading the level from the arguments instead (the highest level among the
batched ones) would batch a call at an outer level from inside an inner
vmap, past a grad transform in between, whose wrappers would then end up
inside the batched tensor: wrong nesting.
"""

from __future__ import annotations

from ...model.extension_op import batch_rule_signature, dispatcher_signature, parameters_of
from ...model.native import NativeFunction
from ...model.schema import is_tensor_like
from ...model.transforms import LEADING_DIMS, POINTWISE, RULE, Vmap
from ...templates import load
from ...tree import BANNER, JSON_SHIM_H

_WHAT = {POINTWISE: ["each batched tensor's batch dimension first, padded to the largest logical",
                    "rank; the unbatched ones broadcast as they are."],
         LEADING_DIMS: ["each tensor's batch dimension first (an unbatched one's expanded: no copy),",
                        "a leading dimension that the kernel batches over."]}


def vmap_kernels(unit, vmap: Vmap) -> tuple[list[str], list[tuple[str, str]]]:
    """The plumbing (and the rule the tool writes) for the op TU's anonymous
    namespace, and the (dispatch key, kernel) pair it registers."""
    f, stem = unit.func, unit.stem
    ret, types = dispatcher_signature(f)
    names = [a.name for a in f.func.schema_order_arguments()]
    lines: list[str] = []
    if vmap.kind == RULE:
        rule, says = f"::{f.namespace}::native::{vmap.rule}", f"{f.namespace}::native::{vmap.rule}, written by hand"
    else:
        rule, says = f"{stem}_{vmap.kind}_rule", f"`vmap: {vmap.kind}`, above"
        lines += _kind_rule(f, vmap.kind, rule, ret, types) + [""]
    tensors = [a.name for a in f.func.schema_order_arguments() if is_tensor_like(a.type)]
    optional = {a.name for a in f.func.schema_order_arguments() if str(a.type) == "Tensor?"}
    unwraps = [x for n in tensors for x in load("vmap_unwrap_optional.cpp" if n in optional else "vmap_unwrap.cpp")
               .lines(name=n)]
    # each tensor's value and batch dimension, the other arguments as they are
    args = [x for a in f.func.schema_order_arguments()
            for x in ([f"{a.name}_value", f"{a.name}_bdim"] if is_tensor_like(a.type) else [a.name])]
    if any(a.is_write for a in f.func.schema_order_arguments()):
        written, others = names[0], [n for n in tensors if n != names[0]]
        check = load("vmap_inplace_check.cpp").lines(
            name=written, op=_label(f), others=" || ".join(f"{n}_bdim.has_value()" for n in others)) if others else []
        call = load("vmap_call_rule_inplace.cpp").lines(
            check=check, rule=rule, args=", ".join(args), returns=[f"return {written};"] if f.func.returns else [])
    else:
        call = load("vmap_call_rule.cpp").lines(rule=rule, args=", ".join(args), results=_wrapped(f))
    name = f"{stem}_batched"
    lines += load("vmap_plumbing.cpp").lines(
        op=_label(f), rule_says=says, ret=ret, name=name, params=parameters_of(f, types),
        none_batched=" && ".join(f"!at::functorch::isBatchedAtLevel({n}, cur_level)" for n in tensors),
        lookup=_lookup(f, ret, types), args=", ".join(names), unwraps=unwraps, call_rule=call)
    return lines, [("FuncTorchBatched", name)]


def _label(f: NativeFunction) -> str:
    n = f.func.name
    return f"{f.namespace}::{n.name}" + (f".{n.overload}" if n.overload else "")


def _lookup(f: NativeFunction, ret: str, types: list[str]) -> list[str]:
    n = f.func.name
    return load("op_lookup.cpp").lines(name=f"{f.namespace}::{n.name}", overload=n.overload,
                                       signature=f"{ret}({', '.join(types)})")


def _wrapped(f: NativeFunction) -> str:
    """The rule's results batched at the current level, as the op returns them."""
    out = []
    for i, r in enumerate(f.func.returns):
        make = "makeBatchedVector" if str(r.type) == "Tensor[]" else "makeBatched"
        out.append(f"at::functorch::{make}(std::get<{2 * i}>(results), std::get<{2 * i + 1}>(results), cur_level)")
    return out[0] if len(out) == 1 else f"std::make_tuple({', '.join(out)})"


def _kind_rule(f: NativeFunction, kind: str, name: str, ret: str, types: list[str]) -> list[str]:
    """The rule of `kind`: the physical operands prepared, the op called on
    them below FuncTorchBatched, each result batched along dimension 0."""
    rule_ret, params = batch_rule_signature(f)
    args = f.func.schema_order_arguments()
    tensors = [a for a in args if is_tensor_like(a.type)]
    optional = {a.name for a in tensors if str(a.type) == "Tensor?"}
    if kind == POINTWISE:
        ranks = ["0"] + [f"({a.name}.has_value() ? {a.name}->dim() - ({a.name}_bdim ? 1 : 0) : 0)"
                         if a.name in optional else f"{a.name}.dim() - ({a.name}_bdim ? 1 : 0)" for a in tensors]
        prepare = load("vmap_pointwise_rank.cpp").lines(ranks=", ".join(ranks))
        operand = {False: "vmap_pointwise_operand.cpp", True: "vmap_pointwise_optional_operand.cpp"}
    else:
        sizes = [f"{a.name}_bdim && {a.name}.has_value() ? {a.name}->sym_size(*{a.name}_bdim)" if a.name in optional
                 else f"{a.name}_bdim ? {a.name}.sym_size(*{a.name}_bdim)" for a in tensors]
        prepare = load("vmap_leading_batch.cpp").lines(batch=" : ".join(sizes + ["c10::SymInt(1)"]))
        operand = {False: "vmap_leading_operand.cpp", True: "vmap_leading_optional_operand.cpp"}
    operands = [x for a in tensors for x in load(operand[a.name in optional]).lines(name=a.name)]
    call = ", ".join(f"{a.name}_" if is_tensor_like(a.type) else a.name for a in args)
    if rule_ret == "void":
        body = load("vmap_rule_inplace.cpp").lines(args=call)
    else:
        n = len(f.func.returns)
        results = "results, 0" if n == 1 else ", ".join(f"std::get<{i}>(results), 0" for i in range(n))
        body = load("vmap_rule_return.cpp").lines(args=call, type=rule_ret, results=results)
    return load("vmap_rule.cpp").lines(op=_label(f), kind=kind, what="\n// ".join(_WHAT[kind]), ret=rule_ret, name=name,
                                       params=", ".join(params), prepare=prepare, operands=operands,
                                       lookup=_lookup(f, ret, types), body=body)


def rule_declaration(f: NativeFunction, vmap: Vmap) -> list[str]:
    """The op header's declaration of a hand-written rule (none for a kind)."""
    if vmap.rule is None:
        return []
    ret, params = batch_rule_signature(f)
    return [""] + load("op_batch_rule.h").lines(native_ns=f"{f.namespace}::native", op=_label(f), name=vmap.rule,
                                                declaration=f"{ret} {vmap.rule}({', '.join(params)});")



def render_json_shim() -> dict[str, str]:
    """The output folder's `nlohmann/json.hpp` (templates/json_shim.h says why)."""
    return {JSON_SHIM_H: load("json_shim.h").substitute(banner=BANNER)}
