"""Backward infos for out-of-place `_foreach_*` ops that derivatives.yaml
does not define.

libtorch's build gives such an op the formulas of the single-tensor op it
applies per element (`_foreach_add.Scalar` -> `add.Scalar`): the formulas
are rewritten to work on element `i` of every list argument (`grad` ->
`grads[i]`, `self` -> `self[i]`, `result` -> `result[i]`), and each list
argument a formula reads is saved whole.  In-place foreach ops reuse the
reference info itself, so they add no class.
"""

from __future__ import annotations

from typing import Optional

from ..model.autograd import (Derivative, DifferentiabilityInfo, ForwardDerivative, SavedAttribute,
                           unique_by_name)
from ..model.cpp import CType, api_name, argument_type, cpp_arguments, tensorListT
from autograd_scons.base.errors import SpecError
from ..model.schema import FUNCTIONAL, INPLACE, OUT, Argument, FunctionSchema, ListType, is_tensor_like
from .native_functions import NativeFunction, NativeSpec

# Foreach ops that lack their reference's trailing `alpha`, so their
# argument count cannot match it.
_FEWER_ARGS_THAN_REFERENCE = frozenset({
    "_foreach_add.Scalar", "_foreach_add.ScalarList",
    "_foreach_sub.Scalar", "_foreach_sub.ScalarList",
})


def _is_foreach(f: NativeFunction) -> bool:
    return f.func.name.base.startswith("_foreach_")


def _signature_key(fs: FunctionSchema) -> tuple:
    """What all variants of one operator share, defaults ignored."""
    s = fs.signature()
    return (str(s.name),
            tuple((a.name, a.type) for a in s.arguments.positional),
            tuple((a.name, a.type) for a in s.arguments.kwarg_only),
            tuple(r.type for r in s.returns))


def _is_reference(f: NativeFunction, ref: FunctionSchema) -> bool:
    """Whether `ref` (a signature) is the per-element op of foreach op `f`:
    same name after `_foreach_`, and each argument's type equal to the
    reference's or a list/optional of it."""
    if f.func.name.base[len("_foreach_"):] != ref.name.base:
        return False
    args, ref_args = f.func.arguments.flat_non_out, ref.arguments.flat_non_out
    if len(args) != len(ref_args) and str(f.func.name) not in _FEWER_ARGS_THAN_REFERENCE:
        return False
    return all(r.type in (a.type, getattr(a.type, "elem", None)) for a, r in zip(args, ref_args))


def _saved_type(f: NativeFunction, a: Argument) -> CType:
    return argument_type(a.type, mutable=a.is_write,
                         const_ref_for_mutable=f.use_const_ref_for_mutable_tensors,
                         ilistref=f.part_of_structured_group).remove_const_ref()


class _Deriver:
    def __init__(self, f: NativeFunction, ref: DifferentiabilityInfo, ref_sig: FunctionSchema):
        self.f, self.ref = f, ref
        self.args = f.func.arguments.flat_non_out
        # reference argument name -> foreach argument
        self.to_foreach = {r.name: a for a, r in zip(self.args, ref_sig.arguments.flat_non_out)}

    def error(self, msg: str) -> SpecError:
        return SpecError(f"cannot derive the backward of '{self.f.func}' from '{self.ref.func.func}': {msg}",
                         self.ref.file or None, self.ref.line or None, str(self.ref.func.func))

    def derivative(self, d: Derivative) -> Derivative:
        formula = d.formula.replace("grad", "grads[i]").replace("result", "result[i]")
        saved_in = []
        for s in d.saved_inputs:
            # `self_scalar_type` was saved from `self.scalar_type()`: read it
            # from the list element instead, and save the whole list.
            ref_name = s.expr.split(".")[0]
            a = self.to_foreach.get(ref_name)
            if a is None:
                raise self.error(f"saved value '{s.name}' ({s.expr}) does not read an argument")
            elem = a.name + "[i]" if isinstance(a.type, ListType) else a.name
            formula = formula.replace(s.name, s.expr.replace(ref_name, elem))
            saved_in.append(SavedAttribute(a.name, _saved_type(self.f, a), a.name))
        saved_out = []
        for s in d.saved_outputs:
            if s.name != "result":
                raise self.error(f"its formula saves output '{s.name}'; only 'result' maps to the list result")
            saved_out.append(SavedAttribute("result", tensorListT, "result"))
        var_names = tuple(self.to_foreach[v].name for v in d.var_names)
        # (the reference's line: a compiler error in the derived formula points at the entry it comes from)
        return Derivative(formula, d.formula, var_names, tuple(saved_in), tuple(saved_out), frozenset(), line=d.line)

    def forward(self, fw: ForwardDerivative) -> ForwardDerivative:
        formula = fw.formula.replace("result", "result[i]") if "result" in fw.formula else fw.formula
        names, types = list(fw.var_names), list(fw.var_types)
        tangents, primals = list(fw.required_inputs_fw_grad), list(fw.required_inputs_primal)
        for a, r in zip(self.args, self.ref.func.func.arguments.flat_non_out):
            if isinstance(a.type, ListType) and not is_tensor_like(a.type):
                formula = formula.replace(r.name, a.name + "[i]")   # a Scalar[] per element
            elif is_tensor_like(a.type):
                for suffix in ("_p", "_t"):
                    formula = formula.replace(r.name + suffix, a.name + suffix)
            elif a.name != r.name:
                formula = formula.replace(r.name, a.name)
            for k, n in enumerate(names):
                if n == r.name:
                    names[k], types[k] = a.name, a.type
            tangents = [a.name if n == r.name else n for n in tangents]
            primals = [a.name if n == r.name else n for n in primals]
        return ForwardDerivative(formula, tuple(names), tuple(types), tuple(tangents), tuple(primals), line=fw.line)

    def info(self) -> DifferentiabilityInfo:
        f, ref = self.f, self.ref
        derivatives = tuple(self.derivative(d) for d in ref.derivatives)
        diff = {n for d in derivatives for n in d.var_names}
        bindings = cpp_arguments(f.func, const_ref_for_mutable=f.use_const_ref_for_mutable_tensors,
                                 ilistref=f.part_of_structured_group)
        return DifferentiabilityInfo(
            name=f.func.name.base, func=f, dispatch_key="Default",
            op=f"Foreach{ref.op}{f.func.name.overload}",
            derivatives=derivatives,
            forward_derivatives=tuple(self.forward(fw) for fw in ref.forward_derivatives),
            all_saved_inputs=unique_by_name([s for d in derivatives for s in d.saved_inputs]),
            all_saved_outputs=unique_by_name([s for d in derivatives for s in d.saved_outputs]),
            available_named_gradients=(), used_named_gradients=frozenset(),
            args_with_derivatives=tuple(b for b in bindings if b.argument is not None and b.name in diff),
            non_differentiable_arg_names=(), output_differentiability=None,
            output_differentiability_conditions=None,
            file=ref.file, line=ref.line,
            entry={"foreach": str(f.func), "native": dict(f.raw), "reference": ref.entry})


def derive_foreach_infos(infos: list[DifferentiabilityInfo], native: NativeSpec) -> list[DifferentiabilityInfo]:
    """The infos libtorch's build adds for foreach ops without an entry of
    their own, in its order (native functions sorted by C++ name)."""
    by_schema: dict[str, dict[str, DifferentiabilityInfo]] = {}
    for i in infos:
        by_schema.setdefault(str(i.func.func), {})[i.dispatch_key] = i
    # Signatures include the base name, so only infos of one base name can
    # share a signature or be the reference of one foreach op.
    by_base: dict[str, list[dict[str, DifferentiabilityInfo]]] = {}
    for per_key in by_schema.values():
        by_base.setdefault(next(iter(per_key.values())).func.func.name.base, []).append(per_key)

    def functional(base: str) -> list[tuple[FunctionSchema, dict[str, DifferentiabilityInfo]]]:
        # signature -> infos of the functional op; a later op with the same
        # signature replaces an earlier one but keeps its position.
        out: dict[tuple, tuple[FunctionSchema, dict]] = {}
        for per_key in by_base.get(base, ()):
            fs = next(iter(per_key.values())).func.func
            if fs.kind() == FUNCTIONAL:
                out[_signature_key(fs)] = (fs.signature(), per_key)
        return list(out.values())

    def has_non_functional(f: NativeFunction) -> bool:
        key = _signature_key(f.func)
        return any(_signature_key(fs) == key for fs in
                   (next(iter(pk.values())).func.func for pk in by_base.get(f.func.name.base, ()))
                   if fs.kind() != FUNCTIONAL)

    out = []
    for f in sorted((f for f in native.functions if _is_foreach(f)), key=lambda f: api_name(f.func)):
        kind = f.func.kind()
        if kind == INPLACE or str(f.func) in by_schema:
            continue  # in-place ones reuse the reference's info; others have their own
        if f.generated and (kind == OUT or has_non_functional(f)):
            continue
        ref = _reference(f, functional(f.func.name.base[len("_foreach_"):]))
        if ref is not None:
            out.append(_Deriver(f, *ref).info())
    return out


def _reference(f: NativeFunction, functional) -> Optional[tuple[DifferentiabilityInfo, FunctionSchema]]:
    for sig, per_key in functional:
        if _is_reference(f, sig):
            ref = per_key.get("Default")
            if ref is not None:
                return ref, sig
    return None
