"""An extension's own op (any namespace but `aten`) as the generator sees it:
its native function paired with the info that differentiates it
(`KernelUnit`), the C++ signature the dispatcher gives its kernels, the
name of its caller (`<ns>::<caller>(...)`, emit/op_kernels/callers.py), and the kernels
it declares for the extension to define (`DeclaredKernel`, declared_kernel.py:
what the linked library's check, tool/kernel_check.py, looks for)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from autograd_scons.base.errors import FormulaError
from .autograd import DifferentiabilityInfo
from .declared_kernel import DeclaredKernel
from .cpp import OPTIONAL_TENSOR, ConstRefCType, argument_type, return_type
from .native import NativeFunction, OpUnitNames
from .schema import OUT, Argument, ListType, OptionalType, is_tensor_like

CPP_KEYWORDS = frozenset("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char8_t char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue
co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
operator or or_eq private protected public register reinterpret_cast requires return short signed sizeof
static static_assert static_cast struct switch template this thread_local throw true try typedef typeid
typename union unsigned using virtual void volatile wchar_t while xor xor_eq""".split())


_IDENT = re.compile(r"[A-Za-z_]\w*")


def cpp_identifier(name: str) -> bool:
    """Whether `name` can name a C++ function (an identifier, not a keyword)."""
    return _IDENT.fullmatch(name) is not None and name not in CPP_KEYWORDS


@dataclass(frozen=True)
class KernelUnit(OpUnitNames):
    """One native function of an extension, with the info that differentiates it."""
    func: NativeFunction
    info: Optional[DifferentiabilityInfo]
    # Between name and overload: `_`, or `__` where `_` would give an op
    # named `x_out` and the overload `x.out` one C++ name (parse/extension_ops.py).
    overload_sep: str = "_"
    # For a view's generated `_copy` twin: the view.
    copy_of: Optional[NativeFunction] = None

    @property
    def entry(self) -> dict:
        return self.info.entry if self.info is not None else {}

    @property
    def differentiated(self) -> Optional[DifferentiabilityInfo]:
        """The info whose Function the Autograd kernel creates (one with an op)."""
        return self.info if self.info is not None and self.info.op else None

    def inputs_without_formula(self) -> list[str]:
        """The tensor inputs (not out=, not written: emit/op_kernels/kernels.py checks
        those) that the info gives no formula and does not mark
        non_differentiable: legal, as in ATen, and checked at run time (ATen
        also leaves out an input named `output`)."""
        info = self.info
        if info is None:
            return []
        with_formula = {b.name for b in info.args_with_derivatives}
        return [a.name for a in self.func.func.arguments.flat_non_out
                if is_tensor_like(a.type) and not a.is_write and a.name not in with_formula
                and a.name not in info.non_differentiable_arg_names and a.name != "output"]

    def uses_autograd_fallback(self) -> bool:
        """An op with no derivatives entry (other than an out= overload) gets no
        Autograd kernel: torch's fallback for an op without one then decides,
        as for the same op registered through torch.library (it runs the kernel
        below its own Autograd key only: ATen ops the kernel calls record their
        history; a gradient that would flow back through a result warns and is
        None)."""
        return self.info is None and self.func.func.kind() != OUT


def _no_kernel_type(t, returned: bool) -> Optional[str]:
    """Why no C++ kernel can take schema type `t` (no registration does:
    GraphModule is Python's; an ArrayRef cannot hold references), or None."""
    if t.base() == "GraphModule":
        return "'GraphModule' is a Python object, which no C++ kernel receives"
    if str(t) == "Generator" and returned:
        return ("a 'Generator' return has no kernel type: the dispatcher types a returned at::Generator as "
                "'Generator?': return 'Generator?'")
    if isinstance(t, ListType) and str(t.elem) == "Scalar?":
        return ("'Scalar?[]' has no C++ kernel type (the dispatcher passes no list of optional Scalars): use "
                "'Scalar[]' or 'float?[]'")
    return None


def dispatcher_signature(f: NativeFunction) -> tuple[str, list[str]]:
    """The dispatcher's C++ return type and parameter types of `f`: what a
    hand-written kernel of it is declared as.  Raises FormulaError for a
    type no kernel can take."""
    fs = f.func
    for t, returned in [(a.type, False) for a in fs.schema_order_arguments()] + [(r.type, True) for r in fs.returns]:
        why = _no_kernel_type(t, returned)
        if why is not None:
            raise FormulaError(why)
    params = [parameter_type(f, a) for a in fs.schema_order_arguments()]
    rets = [return_type(r, const_ref_for_mutable=f.use_const_ref_for_mutable_tensors).cpp_type()
            for r in fs.returns]
    ret = "void" if not rets else rets[0] if len(rets) == 1 else f"::std::tuple<{','.join(rets)}>"
    return ret, params


def parameter_type(f: NativeFunction, a: Argument) -> str:
    """The dispatcher's (faithful) C++ type of one argument.  A written
    optional tensor (`Tensor(a!)?`, as torch.library's custom ops declare
    an optional argument they mutate) is passed as the dispatcher passes
    every optional tensor, `const std::optional<at::Tensor> &` (torchgen's
    C++ API passes it as a plain `Tensor &`, a type the dispatcher refuses
    for this schema at registration)."""
    if a.is_write and isinstance(a.type, OptionalType) and str(a.type.elem) == "Tensor":
        return ConstRefCType(OPTIONAL_TENSOR).cpp_type()
    return argument_type(a.type, mutable=a.is_write, const_ref_for_mutable=f.use_const_ref_for_mutable_tensors,
                         ilistref=f.part_of_structured_group).cpp_type()


def parameters_of(f: NativeFunction, types: Sequence[str]) -> str:
    """A kernel's parameter list: each type of `types` with its argument's name."""
    return ", ".join(f"{t} {a.name}" for t, a in zip(types, f.func.schema_order_arguments()))


def caller_name(namespace: str, stem: str, classes_ns: Optional[str] = None) -> Optional[str]:
    """The caller of the op whose C++ name is `stem`, or None where that name
    cannot be a function of `namespace`: a C++ keyword, or a namespace the
    generated code opens there (`native`, the classes' own)."""
    name = stem[len(namespace) + 1:]
    outer, _, inner = (classes_ns or "").partition("::")
    taken = {"native"} | ({inner.split("::")[0]} if outer == namespace and inner else set())
    return None if name in CPP_KEYWORDS or name in taken else name


def declared_kernels(units: Sequence[KernelUnit]) -> list[DeclaredKernel]:
    """Every kernel the units' `dispatch:` names for the extension to define
    below autograd (not a CompositeImplicitAutograd op's), and every batch
    rule their `vmap:` names."""
    out = []
    for u in units:
        d = u.func.dispatch
        if d is not None and not d.implicit:
            ret, params = dispatcher_signature(u.func)
            out += [DeclaredKernel(u.func.namespace, name, key, u.op, u.func.file, line, ret, tuple(params))
                    for (key, name), line in zip(d.kernels, d.key_lines)]
        out += declared_batch_rule(u)
    return out


def declared_batch_rule(u: KernelUnit) -> list[DeclaredKernel]:
    """The batch rule that `vmap: {rule: NAME}` declares, if any (its
    signature: model/batch_rule.py)."""
    v = u.func.vmap
    if v is None or v.rule is None:
        return []
    ret, params = batch_rule_signature(u.func)
    return [DeclaredKernel(u.func.namespace, v.rule, "FuncTorchBatched", u.op, u.func.file, v.line, ret,
                           tuple(p.rsplit(" ", 1)[0] for p in params))]


# ATen's batch rules take each tensor's batch dimension as this.
BDIM = "std::optional<int64_t>"


def batch_rule_signature(f: NativeFunction) -> tuple[str, list[str]]:
    """The C++ signature of `f`'s batch rule under vmap, ATen's: each Tensor
    (or Tensor?) argument followed by its batch dimension, `<name>_bdim`
    (std::nullopt: not batched), the other arguments as the dispatcher
    passes them; it returns each result followed by its batch dimension, or
    nothing for an op that writes its first argument in place.  torchgen's
    plumbing calls ATen's rules so, and emit/op_kernels/vmap.py's calls an extension's
    (written by the tool for a kind, or by hand: `vmap: {rule: NAME}`).
    (return type, parameters with their names)."""
    params = []
    for a in f.func.schema_order_arguments():
        params.append(f"{parameter_type(f, a)} {a.name}")
        if is_tensor_like(a.type):
            params.append(f"{BDIM} {a.name}_bdim")
    if any(a.is_write for a in f.func.schema_order_arguments()):
        return "void", params
    results = [return_type(r).cpp_type() for r in f.func.returns]
    return f"::std::tuple<{', '.join(x for r in results for x in (r, BDIM))}>", params
