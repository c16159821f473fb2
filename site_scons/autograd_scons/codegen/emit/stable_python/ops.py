"""One op of a stable-ABI extension as Python (templates/stable_python/op.pyt):
its single-level autograd Function and the Autograd kernel that applies it.

- setup_context saves what the backward formulas read, each value only when
  an input whose formula reads it needs a gradient (`needs_input_grad`):
  a tensor through save_for_backward, a size or scalar type as an attribute
  (the entry's saved attributes: `self.sym_sizes()` saves the sizes, not self);
  and what the forward formulas read (save_for_forward);
- backward evaluates each needed formula only (None for the others);
- jvp evaluates the `result:` formulas, and refuses forward AD in one line
  where a differentiable output has none (never a zero tangent).
"""

from __future__ import annotations

from typing import Callable

from autograd_scons.base.errors import FormulaError, SpecError
from ...formula.names import cpp_type, schema_type
from ...model.autograd import DifferentiabilityInfo, differentiable_outputs, uses_ident, written_as
from ...model.cpp import return_names
from ...model.extension_op import KernelUnit
from ...model.schema import FUNCTIONAL, is_tensor_like
from ...templates import load
from .library_registrations import signature, transform_lines, tuple_of

# Locals of the generated methods; an argument may not take these names.
RESERVED = frozenset({"torch", "ctx", "inputs", "output", "keyset", "grads", "need"})


def render_op(unit: KernelUnit, translate: Callable) -> list[str]:
    """The op's lines of the module; `translate(formula, inputs=, outputs=)`
    gives a formula as Python (codegen/formula's translate with the
    functions and helpers bound: render_module)."""
    f = unit.func
    fs = f.func
    label = f"{f.namespace}::{fs.name}"
    where = (f.file, f.line, str(fs))
    if f.dispatch is not None and f.dispatch.implicit:
        return []   # differentiated through its CompositeImplicitAutograd kernel
    _check_supported(unit, where)
    args = fs.schema_order_arguments()
    names = [a.name for a in args]
    kw = [a.name for a in fs.arguments.kwarg_only]
    common = dict(label=label, schema=str(fs), stem=unit.stem, namespace=f.namespace, name=fs.name.name,
                  overload=fs.name.overload or "default", overload_name=str(fs.name),
                  params=", ".join(names), keyword=", ".join(f'"{n}": {n}' for n in kw),
                  signature=signature(fs, where), transforms=transform_lines(unit, names, where))
    info = unit.info
    if info is None or not info.op:
        return load("stable_python/op_no_formula.pyt").lines(common)
    o = _Op(unit, info, translate)
    return load("stable_python/op.pyt").lines(
        common,
        positional=tuple_of(n for n in names if n not in kw),
        setup=o.setup(), backward=o.backward(), tangents=", ".join(f"{n}_t" for n in names), jvp=o.jvp())


def _check_supported(unit: KernelUnit, where) -> None:
    fs = unit.func.func
    why = None
    if fs.kind() != FUNCTIONAL:
        why = (f"an op that writes an argument (kind {fs.kind()}): the stable target's Python autograd covers "
               "functional ops; declare the functional op only")
    elif unit.func.view is not None or unit.func.returns_view:
        why = "a view op: the stable target's Python autograd does not make views yet"
    else:
        for a in fs.schema_order_arguments():
            if str(a.type) not in ("Tensor", "Tensor?") and is_tensor_like(a.type):
                why = f"the '{a.type}' argument '{a.name}': lists of tensors are not supported by the stable target yet"
            elif a.name in RESERVED or a.name.startswith("_"):
                why = f"the argument name '{a.name}' is one the generated Python uses (or starts with '_'): rename it"
        for r in fs.returns:
            if str(r.type) != "Tensor":
                why = f"the '{r.type}' output: the stable target's Python autograd returns Tensors only"
    if why:
        raise SpecError(f"not supported by the stable target: {why}", *where)


class _Op:
    def __init__(self, unit: KernelUnit, info: DifferentiabilityInfo, translate: Callable):
        self.unit, self.info, self.translate = unit, info, translate
        fs = info.func.func
        self.args = list(fs.schema_order_arguments())
        self.index = {a.name: i for i, a in enumerate(self.args)}
        self.tensors = {a.name for a in self.args if is_tensor_like(a.type)}
        self.rnames = [("result" if x == "self" else x) for x in return_names(fs)]
        self.douts = [o.name for o in differentiable_outputs(info)]
        self.types = {a.name: schema_type(str(a.type)) for a in self.args}
        self.outputs = {n: schema_type(str(r.type)) for n, r in zip(self.rnames, fs.returns)}

    def _py(self, formula: str, line: int, extra: dict) -> str:
        try:
            return self.translate(formula, inputs={**self.types, **extra}, outputs=self.outputs)
        except FormulaError as e:
            raise SpecError(str(e), self.info.file or None, line or self.info.line or None,
                            str(self.info.func.func)) from None

    def _results(self) -> str:
        return "output" if len(self.rnames) == 1 else ", ".join(self.rnames)

    def _need(self, var_names) -> str:
        return " or ".join(f"need[{self.index[v]}]" for v in var_names)

    # -- setup_context -----------------------------------------------------

    def saved(self):
        """(attribute, is_output, the derivatives reading it), in first-use order."""
        order: dict[str, tuple] = {}
        for d in self.info.derivatives:
            for a, out in [(a, False) for a in d.saved_inputs] + [(a, True) for a in d.saved_outputs]:
                prev = order.get(a.name)
                order[a.name] = (a, out, (prev[2] if prev else ()) + tuple(d.var_names))
        return list(order.values())

    def _setup_reads(self) -> set[str]:
        """The outputs setup_context saves (for either direction)."""
        saved = {a.name for a, is_output, _ in self.saved() if is_output}
        return saved | set(self._fw_reads()[0]) | {r for r in self.rnames if r not in self.douts}

    def setup(self) -> list[str]:
        out = [f"{', '.join(a.name for a in self.args)}, _keyset = inputs"]
        results = len(self.rnames) > 1 or self.rnames[0] in self._setup_reads()
        out += [f"{self._results()} = output" if len(self.rnames) > 1 else f"{self.rnames[0]} = output"][:results]
        out.append("need = ctx.needs_input_grad")
        tensors: list[tuple[str, str]] = []
        plain: list[tuple[str, str]] = []
        for a, _, readers in self.saved():
            value = a.name if a.expr == a.name else self._py(a.expr, self.info.line, {})
            held = f"{value} if {self._need(readers)} else None"
            (tensors if a.type.is_tensor else plain).append((a.name, held))
        if tensors:
            out.append("ctx.save_for_backward(" + ", ".join(h for _, h in tensors) + ")")
        out += [f"ctx.{n} = {h}" for n, h in plain]
        for i, r in enumerate(self.rnames):
            if r not in self.douts:
                out.append(f"ctx.mark_non_differentiable({r})")
        fw_tensors, fw_plain = self._fw_reads()
        # Always: under torch.compile's trace of forward-AD code no dual
        # level is open when setup_context runs, yet jvp follows (saved for
        # forward and no jvp: released with ctx, no cycle).
        if fw_tensors:
            out.append("ctx.save_for_forward(" + ", ".join(fw_tensors) + ")")
        out += [f"ctx.fw_{n} = {n}" for n in fw_plain]
        return out

    # -- backward ----------------------------------------------------------

    def backward(self) -> list[str]:
        info = self.info
        out = ["need = ctx.needs_input_grad"]
        # grads[i] of a formula counts the differentiable outputs only
        idx = [self.rnames.index(d) for d in self.douts]
        if idx != list(range(len(idx))):
            out.append("grads = " + tuple_of(f"grads[{i}]" for i in idx))
        if any(uses_ident(d.formula, "grad") for d in info.derivatives):
            out.append("grad = grads[0]")
        for g in sorted(info.used_named_gradients):
            out.append(f"{g} = grads[{self.douts.index(g[len('grad_'):])}]")
        saved = self.saved()
        tensors = [a.name for a, _, _ in saved if a.type.is_tensor]
        if tensors:
            out.append(f"{', '.join(tensors)}{',' if len(tensors) == 1 else ''} = ctx.saved_tensors")
        out += [f"{a.name} = ctx.{a.name}" for a, _, _ in saved if not a.type.is_tensor]
        results = {f"_d_{a.name}": "None" for a in self.args}
        for d in info.derivatives:
            py = self._py(d.formula, d.line, {a.name: cpp_type(a.type.cpp_type()) for a, _, _ in saved})
            targets = [f"_d_{v}" for v in d.var_names]
            none = "None" if len(targets) == 1 else "(" + ", ".join("None" for _ in targets) + ")"
            out.append(f"{', '.join(targets)} = ({py}) if {self._need(d.var_names)} else {none}")
            for t in targets:
                results[t] = t
        out.append(f"return {', '.join(results.values())}, None")
        return out

    # -- jvp ---------------------------------------------------------------

    def _fw_formulas(self) -> list[tuple]:
        """(forward derivative, the arguments of the op itself on the
        tangents for an `auto_linear` one, else None), per `result:` key."""
        diff = {b.name for b in self.info.args_with_derivatives}
        linear = [a.name + "_t" if a.name in diff else a.name for a in self.args]
        return [(fd, linear if written_as(fd, self.info) == "auto_linear" else None)
                for fd in self.info.forward_derivatives]

    def _fw_reads(self) -> tuple[list[str], list[str]]:
        """The tensors (primals, outputs) and other arguments the forward formulas read."""
        tensors: list[str] = []
        plain: list[str] = []
        for fd, linear in self._fw_formulas():
            text = fd.formula if linear is None else " ".join(linear)
            for a in self.args:
                used = uses_ident(text, a.name) or uses_ident(text, f"{a.name}_p")
                if used and a.name not in tensors + plain:
                    (tensors if a.name in self.tensors else plain).append(a.name)
            tensors += [r for r in self.rnames if uses_ident(text, r) and r not in tensors]
        return tensors, plain

    def jvp(self) -> list[str]:
        formulas = self._fw_formulas()
        covered = {n for fd, _ in formulas for n in fd.var_names}
        missing = [o for o in self.douts if o not in covered]
        if missing or not formulas:
            why = ("derivatives.yaml has no forward formula (result:) for its output "
                   + ", ".join(repr(m) for m in missing or self.douts))
            return [f"_rt.no_forward_formula(_{self.unit.stem}_Function, {why!r})"]
        tensors, plain = self._fw_reads()
        out = []
        if tensors:
            out.append(f"{', '.join(tensors)}{',' if len(tensors) == 1 else ''} = ctx.saved_tensors")
        out += [f"{n} = ctx.fw_{n}" for n in plain]
        texts = [fd.formula for fd, linear in formulas if linear is None]
        out += [f"{n}_p = {n}" for n in sorted(self.tensors)
                if n in tensors and any(uses_ident(t, f"{n}_p") for t in texts)]
        for fd, linear in formulas:
            if linear is not None:
                py = f"_{self.unit.stem}_op(" + ", ".join(linear) + ")"
            else:
                py = self._py(fd.formula, fd.line, {})
            out.append(", ".join(f"_t_{n}" for n in fd.var_names) + f" = {py}")
        tangents = [f"_t_{r}" if r in self.douts else "None" for r in self.rnames]
        out.append(f"return {', '.join(tangents)}")
        return out
