"""Which native function a derivatives entry names (the schema, then the
variant of its signature group the entry's base name means), and the
`{view}_copy` twins that inherit a view's infos.
"""

from __future__ import annotations

from ..model.autograd import DifferentiabilityInfo
from ..model.cpp import api_name
from ..model.native import NativeFunction, NativeSpec
from autograd_scons.base.errors import FormulaError, SpecError


class Matcher:
    """Finds the native function a derivatives entry's `name:` means."""
    def __init__(self, native: NativeSpec):
        self.by_schema: dict[str, NativeFunction] = {}
        self.by_signature: dict[str, list[NativeFunction]] = {}
        for f in native.ordered:
            s = str(f.func)
            if s in self.by_schema:
                raise SpecError(f"two native functions have the schema '{s}' (the other is at "
                                f"line {self.by_schema[s].line})", f.file, f.line, s)
            self.by_schema[s] = f
            self.by_signature.setdefault(f.func.signature_key, []).append(f)

    def canonical(self, spec: str, base_name: str) -> NativeFunction:
        f = self.by_schema.get(spec)
        if f is None:
            similar = sorted(s for s, g in self.by_schema.items() if api_name(g.func) == base_name)
            hint = ("; schemas named like it: " + " | ".join(similar)) if similar else \
                "; no native function has that name"
            raise FormulaError(f"no native function has exactly this schema{hint}")
        group = self.by_signature[f.func.signature_key]
        for g in group:
            if not g.func.is_functional_fn() and not g.func.is_out_fn() and g.func.name.name == base_name:
                return g
        if api_name(group[0].func) != base_name + "_":
            raise FormulaError(f"'{base_name}' names none of the variants of '{f.func}'")
        return group[0]  # only an in-place variant exists



def view_copy_infos(by_func: dict[str, list[DifferentiabilityInfo]],
                     native: NativeSpec) -> list[DifferentiabilityInfo]:
    """A view's `{view}_copy` twin has the same derivatives, unless
    derivatives.yaml already defines them."""
    groups = {str(g.view.func.name): g for g in native.view_groups}
    out = []
    for infos in by_func.values():
        g = groups.get(str(infos[0].func.func.name))
        if g is None or g.view_copy is None or str(g.view_copy.func) in by_func:
            continue
        for i in infos:
            base, _, rest = i.name.partition(".")
            out.append(DifferentiabilityInfo(
                name=f"{base}_copy.{rest}", func=g.view_copy, dispatch_key=i.dispatch_key,
                op=None if i.op is None else f"{i.op}_copy",
                derivatives=i.derivatives, forward_derivatives=i.forward_derivatives,
                all_saved_inputs=i.all_saved_inputs, all_saved_outputs=i.all_saved_outputs,
                available_named_gradients=i.available_named_gradients,
                used_named_gradients=i.used_named_gradients,
                args_with_derivatives=i.args_with_derivatives,
                non_differentiable_arg_names=i.non_differentiable_arg_names,
                output_differentiability=i.output_differentiability,
                output_differentiability_conditions=i.output_differentiability_conditions,
                file=i.file, line=i.line, entry=i.entry))
    return out
