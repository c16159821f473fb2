"""The C++ signature of an op's batch rule under vmap, ATen's: each Tensor
(or Tensor?) argument followed by its batch dimension,
`std::optional<int64_t> <name>_bdim` (std::nullopt: not batched), the
other arguments as the dispatcher passes them; it returns each result
followed by its batch dimension, or nothing for an op that writes its
first argument in place.  torchgen's plumbing calls ATen's rules so;
the generated plumbing (emit/vmap.py) calls an extension's the same way,
whether the tool writes the rule (by kind) or the extension does
(`vmap: {rule: NAME}`, declared in the op's header and by `signatures`).
"""

from __future__ import annotations

from .cpp import return_type
from .extension_op import parameter_type
from .native import NativeFunction
from .schema import is_tensor_like

BDIM = "std::optional<int64_t>"


def batch_rule_signature(f: NativeFunction) -> tuple[str, list[str]]:
    """(return type, parameters with their names) of `f`'s batch rule."""
    params = []
    for a in f.func.schema_order_arguments():
        params.append(f"{parameter_type(f, a)} {a.name}")
        if is_tensor_like(a.type):
            params.append(f"{BDIM} {a.name}_bdim")
    if any(a.is_write for a in f.func.schema_order_arguments()):
        return "void", params
    results = [return_type(r, const_ref_for_mutable=False).cpp_type() for r in f.func.returns]
    return f"::std::tuple<{', '.join(x for r in results for x in (r, BDIM))}>", params


def batch_rule_arguments(f: NativeFunction) -> list[str]:
    """What the plumbing passes a rule: each tensor's unwrapped value and batch
    dimension (`<name>_value`, `<name>_bdim`), the other arguments as they are."""
    out = []
    for a in f.func.schema_order_arguments():
        out += [f"{a.name}_value", f"{a.name}_bdim"] if is_tensor_like(a.type) else [a.name]
    return out


def batched_names(f: NativeFunction) -> list[str]:
    """The tensor arguments that the plumbing unwraps."""
    return [a.name for a in f.func.schema_order_arguments() if is_tensor_like(a.type)]
