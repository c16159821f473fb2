"""`support.cpp`: the out-of-line definitions every generated TU calls.

The load-time class claim (load_check.h) and compiled autograd's call into
the traced graph are the same code in every Function's file, and so are
compiled autograd's steps on the common saved types (collect, swap, pack,
unpack).  Defined inline in the shared headers or instantiated from
torch's templates, each TU compiled its own copy, a large part of a
formula edit's TU (docs/compile-layout.md).  They are defined here
instead, once per library: the first unity bucket includes this file
(unity_files.py), and with unity=0 it is a TU of its own.

Its text depends on the options only, never on the specs (a new saved
type must not recompile the first bucket): the wrapped types are a fixed
list, the common ones, and a value of any other type calls torch directly
(`call`).
"""

from __future__ import annotations

import re
from typing import Optional

from ...templates import Template, load
from ...tree import BANNER, LOAD_CHECK_H, PRELUDE_IMPL_H, SUPPORT_CPP
from ..cache_key import cache_tag_definitions
from .load_check import load_check_definitions
from ..options import EmitOptions

# The types compiled autograd's steps are instantiated for, spelled as the
# emitter spells them (emit/functions/saved.py): a saved member's type (collect,
# before, after) and an apply_functional argument's (pack, unpack, its
# packed type).  Each adds to the first bucket's compile whether the
# library saves it or not, so these are the most
# common only: 85% of torch's 2,028 saved values (and 702 of its 711
# Functions take at most 4 inputs).
_COMMON = ("at::Scalar", "int64_t", "bool", "c10::SymInt", "std::vector<c10::SymInt>", "std::vector<int64_t>")
SAVED_TENSORS = ("SavedVariable", "std::vector<SavedVariable>")   # collected with their is-output flag
MEMBERS = SAVED_TENSORS + _COMMON
ARGUMENTS = ("at::Tensor", "std::vector<at::Tensor>", "size_t") + _COMMON \
    + tuple(f"std::array<bool, {n}>" for n in range(1, 5))   # needs_input_grad

# step: (declaration's signature with T, torch's own call, types it takes)
_STEPS = {
    "collect": ("void {f}(CompiledNodeArgs& args, const T& v)", "args.collect(v)", _COMMON),
    "collect_saved": ("void {f}(CompiledNodeArgs& args, const T& v, bool is_output)",
                      "args.collect(v, is_output)", SAVED_TENSORS),
    "before": ("void {f}(SwapSavedVariables& saved, T& v)", "saved.before(v)", MEMBERS),
    "after": ("void {f}(SwapSavedVariables& saved, T& v)", "saved.after(v)", MEMBERS),
    "pack": ("void {f}(PackedArgs& packed, const T& v)", "packed.pack(v)", ARGUMENTS),
    "unpack": ("T {f}(PackedArgs& packed)", "return packed.unpack<T>()", ARGUMENTS),
    "packed_type": ("at::TypePtr {f}()", "return torch::dynamo::autograd::IValuePacker<T>::packed_type()",
                    ARGUMENTS),
}


_T_REF = re.compile(r"\bT&")
_DEFINITION = Template("template <class T> ${head} {")


def call(step: str, type_: str, args: str) -> Optional[str]:
    """The expression that runs `step` on a value of `type_` through its
    instantiation in support.cpp (`args`: the call's arguments), or None
    for a type it has none for (call torch's template directly)."""
    if type_ not in _STEPS[step][2]:
        return None
    return f"ca_{step}<{type_}>({args})"


def step_declarations() -> list[str]:
    """What prelude_impl.h declares of the steps (in the classes' namespace)."""
    return [f"template <class T> {sig.format(f='ca_' + step)};" for step, (sig, _, _) in _STEPS.items()]


def _step_definitions() -> list[str]:
    lines = []
    for step, (sig, body, types) in _STEPS.items():
        head = sig.format(f="ca_" + step)
        lines += [_DEFINITION.substitute(head=head), f"  {body};", "}", ""]
        ret, _, params = head.partition(f" ca_{step}(")
        for t in types:
            typed = _T_REF.sub(t + "&", params)
            lines.append(f"template {t if ret == 'T' else ret} ca_{step}<{t}>({typed};")
        lines.append("")
    return lines


def render_support(opts: EmitOptions) -> dict[str, str]:
    return {SUPPORT_CPP: load("support.cpp").substitute(
        banner=BANNER, ns=opts.ns, prelude_impl_h=PRELUDE_IMPL_H, load_check_h=LOAD_CHECK_H,
        load_check_definitions=load_check_definitions(opts),
        cache_tag_definitions=cache_tag_definitions(opts), step_definitions=_step_definitions())}
