"""Per-op C++ for autograd Functions: one header and one TU per class, plus
the shared files (preludes, umbrella header).

Layout under the output folder:
  prelude.h, prelude_impl.h   shared headers (see prelude.py)
  load_check.h                the load-time clash check (see load_check.py)
  support.cpp                 what those headers declare, compiled once (support.py)
  Functions.h                 umbrella: every op header, sorted
  functions/<Op>.h, .cpp      one Function; the .cpp includes only its own
                              header, prelude_impl.h and load_check.h, never
                              the umbrella

Everything here is a pure function of its arguments: same infos and options,
same bytes.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..api.autograd import DifferentiabilityInfo
from ..errors import SpecError
from .backward import backward_body
from ..tree import BANNER, LOAD_CHECK_H, PRELUDE_H, PRELUDE_IMPL_H, UMBRELLA_H, function_file, include
from .load_check import CHECK_LINE, claim_lines, render_load_check
from .options import EmitOptions
from .prelude import render_preludes
from .saved import OPT_TENSOR_LIST, TENSOR, TENSOR_LIST, SavedSlot, saved_slots
from .superclass import superclass
from .support import call, render_support

MOBILE_GUARD = '  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn\'t work on mobile");'


def op_infos(infos: Iterable[DifferentiabilityInfo],
             foreach_infos: Iterable[DifferentiabilityInfo] = ()) -> list[DifferentiabilityInfo]:
    """The infos that become classes, in emission order: those of `infos`
    with an op (load order), then `foreach_infos` (from
    `derive_foreach_infos`; passing them inside `infos` works as well).
    File-name clashes are checked over every unit: units.check_file_names."""
    return [i for i in infos if i.op] + [i for i in foreach_infos if i.op]


# ------------------------------------------------------------ one op


# Compiled autograd's steps: through support.cpp's instantiation for the
# common types, else torch's template called directly (emit/support.py).
def _unpack(t: str) -> str:
    return call("unpack", t, "packed_args") or f"packed_args.unpack<{t}>()"


def _packed_type(t: str) -> str:
    return call("packed_type", t, "") or f"torch::dynamo::autograd::IValuePacker<{t}>::packed_type()"


def _pack(t: str, value: str) -> str:
    return call("pack", t, f"packed_args, {value}") or f"packed_args.pack({value})"


def _swap(step: str, s: SavedSlot) -> str:
    return (call(step, s.member_type, f"saved, {s.field}") or f"saved.{step}({s.field})") + ";"


def _collect(s: SavedSlot) -> str:
    if s.kind in (TENSOR, TENSOR_LIST, OPT_TENSOR_LIST):
        flag = "true" if s.is_output else "false"
        wrapped = call("collect_saved", s.member_type, f"args, {s.field}, {flag}")
    else:
        wrapped = call("collect", s.member_type, f"args, {s.field}")
    return wrapped + ";" if wrapped else s.collect


class _Op:
    """What both files of one Function are built from."""

    def __init__(self, info: DifferentiabilityInfo):
        self.info = info
        self.op = info.op
        self.superclass = superclass(info)
        try:
            self.slots: list[SavedSlot] = saved_slots(info.all_saved_inputs, info.all_saved_outputs)
        except ValueError as e:
            raise SpecError(str(e), info.file or None, info.line or None, str(info.func.func)) from None
        args = info.args_with_derivatives
        self.n = len(args)
        # List inputs get one slot per element; the count is saved at forward.
        self.sized = [b.name for b in args if b.ctype.is_tensor_list]
        self.ranges = [f"auto {b.name}_ix = gen.range({b.name + '_size_' if b.name in self.sized else 1});"
                       for b in args]
        self.retain = info.uses_retain_variables
        # apply_functional parameters: (type without &, name, by reference)
        self.params: list[tuple[str, str, bool]] = (
            [("size_t", f"{n}_size_", False) for n in self.sized]
            + [(s.param_type, s.name, True) for s in self.slots]
            + ([("bool", "retain_variables", False)] if self.retain else []))
        self.call_args = ([f"{n}_size_" for n in self.sized] + [s.arg for s in self.slots]
                          + (["retain_variables"] if self.retain else []))

    @property
    def source(self) -> str:
        i = self.info
        key = "" if i.dispatch_key == "Default" else f" [{i.dispatch_key}]"
        return f"// Autograd Function for {i.func.func}{key}"

    # -- header ------------------------------------------------------------

    def header(self, ns: str) -> str:
        op, sup = self.op, self.superclass
        extra = sorted({h for s in self.slots for h in s.includes})
        release = [line for s in self.slots for line in s.release]
        if release:
            release.insert(0, "std::lock_guard<std::mutex> lock(mutex_);")
        members = [f"{t} {n}{'' if v is None else ' = ' + v};" for s in self.slots for t, n, v in s.members]
        members += [f"size_t {n}_size_ = 0;" for n in self.sized]
        here = function_file(op, ".h")
        out = [BANNER, self.source, "#pragma once", "", f'#include "{include(here, PRELUDE_H)}"', *extra, "",
               f"namespace {ns} {{", "",
               f"struct {op} : public {sup} {{",
               f"  using {sup}::{sup};",
               "  variable_list apply(variable_list&& grads) override;",
               f'  std::string name() const override {{ return "{op}"; }}',
               "  void release_variables() override {",
               *("    " + x for x in release),
               "  }"]
        if self.retain:
            # The formula may consume saved outputs when the graph is freed.
            out += ["  void will_release_variables() override {",
                    "    retain_variables = false;",
                    "  }"]
            members.insert(0, "bool retain_variables = true;")
        out += ["  void compiled_args(CompiledNodeArgs& args) const override;",
                "  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override;",
                ""]
        out += ["  " + m for m in members]
        out += ["};", "", f"}}  // namespace {ns}", ""]
        return "\n".join(out)

    # -- definitions -------------------------------------------------------

    def _needs_input_grad(self) -> list[str]:
        """Which inputs the engine wants gradients for (apply-side)."""
        return (["SlotRanges gen;"] + self.ranges
                + [f"auto needs_input_grad = std::array<bool, {self.n}>{{"]
                + [f"  task_should_compute_output({{{b.name}_ix}})," for b in self.info.args_with_derivatives]
                + ["};"])

    def _unpacks(self) -> list[str]:
        return [s.check for s in self.slots if s.check] + [s.unpack for s in self.slots if s.unpack]

    def definitions(self, ns: str) -> str:
        op = self.op
        sig = "".join(f",\n    {t}{'&' if ref else ''} {n}" for t, n, ref in self.params)
        args = "".join(", " + a for a in self.call_args)
        ind = lambda lines, k=2: [" " * k + x for x in lines]  # noqa: E731
        lock = ["std::lock_guard<std::mutex> lock(mutex_);"] if any(s.release for s in self.slots) else []
        prepare = ind(self._unpacks() + self._needs_input_grad())  # shared by apply and apply_with_saved
        mask = f"std::array<bool, {self.n}>"
        here = function_file(op, ".cpp")
        out = [BANNER, self.source, "",
               f'#include "{include(here, function_file(op, ".h"))}"', f'#include "{include(here, PRELUDE_IMPL_H)}"',
               f'#include "{include(here, LOAD_CHECK_H)}"', "",
               f"namespace {ns} {{", "",
               "// The backward as a pure function of gradients and saved values, so that",
               "// compiled autograd can trace it.",
               f"static variable_list {op}_apply_functional(",
               "    variable_list&& grads,",
               f"    std::array<bool, {self.n}> needs_input_grad{sig}) {{",
               "  SlotRanges gen;", *ind(self.ranges),
               "  variable_list grad_inputs(gen.size());",
               *ind(backward_body(self.info)),
               "  return grad_inputs;",
               "}", "",
               f"static variable_list {op}_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args) {{",
               "#ifdef C10_MOBILE", MOBILE_GUARD, "  return {};", "#else",
               "  auto packed_args = PackedArgs(args);",
               f"  auto needs_input_grad = {_unpack(mask)};",
               *(f"  auto {n} = {_unpack(t)};" for t, n, _ in self.params),
               f"  return {op}_apply_functional(variable_list(grads), needs_input_grad{args});",
               "#endif",
               "}", "",
               f"variable_list {op}::apply(variable_list&& grads) {{",
               "  " + CHECK_LINE,
               *ind(lock), *prepare,
               f"  return {op}_apply_functional(std::move(grads), needs_input_grad{args});",
               "}", "",
               f"void {op}::compiled_args(CompiledNodeArgs& args) const {{",
               "  " + CHECK_LINE,
               *ind([_collect(s) for s in self.slots]),
               "}", "",
               f"variable_list {op}::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {{",
               "#ifdef C10_MOBILE", MOBILE_GUARD, "  return {};", "#else",
               *ind([_swap("before", s) for s in self.slots]),
               "  // Compiled autograd binds the backward by this key, process-wide: the",
               "  // qualified name (mangled: an identifier), as name() is the op's alone",
               "  // and another library's class, or libtorch's, may share it.",
               f"  static const std::string compiled_autograd_bind_key = typeid({op}).name();",
               "  static bool called = false;",
               "  if (!called) {",
               "    called = true;",
               "    std::vector<at::TypePtr> schema = {",
               f"        {_packed_type(mask)},",
               *(f"        {_packed_type(t)}," for t, _, _ in self.params),
               "    };",
               "    torch::dynamo::autograd::getPyCompilerInterface()->bind_function(",
               f"        saved.get_py_compiler(), compiled_autograd_bind_key, {op}_apply_functional_ivalue, schema);",
               "  }",
               "  PackedArgs packed_args;",
               *prepare,
               f"  {_pack(mask, 'needs_input_grad')};",
               *(f"  {_pack(t, a)};" for (t, _, _), a in zip(self.params, self.call_args)),
               "  auto output_result = compiled_autograd_apply_functional(",
               "      packed_args, next_edges(), saved, grads, compiled_autograd_bind_key);",
               *ind([_swap("after", s) for s in self.slots]),
               "  return output_result;",
               "#endif",
               "}", "",
               *claim_lines(op, ns),
               f"}}  // namespace {ns}", ""]
        return "\n".join(out)


def render_op(info: DifferentiabilityInfo, opts: EmitOptions) -> dict[str, str]:
    """`functions/<Op>.h` and `functions/<Op>.cpp` for one info with an op."""
    if not info.op:
        raise ValueError(f"info for '{info.func.func}' has no op: nothing is differentiable")
    o = _Op(info)
    return {function_file(o.op, ".h"): o.header(opts.ns),
            function_file(o.op, ".cpp"): o.definitions(opts.ns)}


# -------------------------------------------------------------- shared


def render_shared(ops: Sequence[str], opts: EmitOptions) -> dict[str, str]:
    """The preludes and the umbrella `Functions.h` (the unity buckets are the
    compile layout's: see layout.py)."""
    files = render_preludes(opts)
    files.update(render_load_check())
    files.update(render_support(opts))
    files[UMBRELLA_H] = "\n".join(
        [BANNER, "// Every generated autograd Function.", "#pragma once", "", f'#include "{PRELUDE_H}"', ""]
        + [f'#include "{function_file(op, ".h")}"' for op in sorted(ops)] + [""])
    return files


def render_all(infos: Sequence[DifferentiabilityInfo], opts: EmitOptions) -> dict[str, str]:
    """Every file for these op infos (as returned by op_infos)."""
    files: dict[str, str] = {}
    for info in infos:
        files.update(render_op(info, opts))
    files.update(render_shared([i.op for i in infos], opts))
    return files
