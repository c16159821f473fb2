"""Calls of named functions: the formula's helpers, ATen functions
(`at::sum`, or unqualified `where`), C++'s own (`std::get<0>`,
`std::vector<T>(n, v)`, `Tensor()`), and math on numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from . import names as N
from .syntax import Call, Name

if TYPE_CHECKING:
    from .translate import Translator, Typed

# Constructors whose Python is their argument, or nothing: C++ name -> type.
_WRAPPERS = {"c10::SymInt": "int", "at::Scalar": "Scalar", "c10::Scalar": "Scalar", "Scalar": "Scalar",
             "std::optional": None, "c10::optional": None, "at::OptionalArrayRef": "int[]?",
             "c10::OptionalArrayRef": "int[]?", "at::IntArrayRef": "int[]", "c10::SymIntArrayRef": "int[]",
             "IntArrayRef": "int[]", "SymIntArrayRef": "int[]",
             "at::ArrayRef": None, "c10::ArrayRef": None}
_UNDEFINED_TENSOR = {"Tensor", "at::Tensor"}


def function_call(tr: "Translator", c: Call, fn: Name) -> "Typed":
    text = fn.text
    if fn.template is not None:
        return _template_call(tr, c, fn)
    if text in _UNDEFINED_TENSOR:
        if c.args:
            raise tr.refuse(f"the constructor '{text}(...)' with arguments", c)
        return "None", "None"
    if text in _WRAPPERS:
        return _wrapper(tr, c, text, _WRAPPERS[text])
    if text in ("GradMode::is_enabled", "at::GradMode::is_enabled", "c10::GradMode::is_enabled") and not c.args:
        return "torch.is_grad_enabled()", "bool"
    if text == "std::numeric_limits::infinity":
        return "math.inf", "float"
    own = tr.own_helpers
    if own is not None and fn.parts[0] not in LIBRARY_NAMESPACES and fn.parts[-1] in own.types:
        # `myops::f(...)` or `f(...)`: the extension's own helper (its module
        # first, as the user named it for these formulas)
        args = tr.arguments(c.args)
        return f"{tr.own_prefix}{fn.parts[-1]}({', '.join(a for a, _ in args)})", own.types[fn.parts[-1]]
    if len(fn.parts) > 1 and fn.parts[0] not in LIBRARY_NAMESPACES:
        raise tr.refuse(_not_own(text, fn.parts[-1], own), c)
    if (len(fn.parts) == 1 or fn.parts[0] == "at" and len(fn.parts) == 2 and lookup(tr, fn.parts[1]) is None) \
            and fn.parts[-1] in tr.helpers:
        text = fn.parts[-1]
        args = tr.arguments(c.args)
        return f"{tr.helper_prefix}{text}({', '.join(a for a, _ in args)})", tr.helpers[text]
    if fn.parts[0] == "std" and len(fn.parts) == 2 and fn.parts[1] in {"sqrt", "exp", "log", "pow", "abs"}:
        return _math(tr, c, fn.parts[1])
    if len(fn.parts) == 1 or (len(fn.parts) == 2 and fn.parts[0] == "at"):
        name = fn.parts[-1]
        if len(fn.parts) == 1 and name in {"sqrt", "exp", "log", "pow", "abs", "fabs"}:
            args = tr.arguments(c.args)
            if all(N.is_number(t) for _, t in args):
                return _math(tr, c, name)
        callee = lookup(tr, name)
        if callee is not None:
            return aten_call(tr, c, callee, tr.arguments(c.args), receiver=None)
        if len(fn.parts) == 1 and own is not None:
            raise tr.refuse(f"the call of '{name}' (not a function of the helper module '{own.path}', nor one "
                            "of torch's helpers, nor an ATen function)", c)
        if len(fn.parts) == 1:
            raise tr.refuse(f"the call of '{name}' (not a helper of the formulas' module, nor an ATen "
                            "function)", c)
    raise tr.refuse(f"the call of '{text}'", c)


# Namespaces of C++ libraries, not of an extension's helpers: `at::f` is ATen's.
LIBRARY_NAMESPACES = frozenset({"at", "std", "c10", "torch", "caffe2", "GradMode"})


def _not_own(text: str, name: str, own) -> str:
    """Why `ns::name(...)` (an extension's helper namespace) is refused."""
    if own is None:
        return (f"the call of '{text}' (a C++ helper: the stable target calls a Python one, from the module "
                f"that python_helpers= names, defining '{name}')")
    return f"the call of '{text}' ('{name}' is not a function of the helper module '{own.path}')"


def lookup(tr: "Translator", name: str) -> Optional[N.Callee]:
    """The ATen function `name` calls: itself, or without `_symint` (C++'s
    SymInt overload; Python's takes SymInts anyway)."""
    for n in (name, name[: -len("_symint")] if name.endswith("_symint") else None):
        if n is not None and n in tr.functions:
            return tr.functions[n]
    return None


def _math(tr: "Translator", c: Call, fname: str) -> "Typed":
    args = tr.arguments(c.args)
    if not all(N.is_number(t) for _, t in args):
        raise tr.refuse(f"'{fname}' of a value that is not a number", c)
    fname = {"fabs": "abs"}.get(fname, fname)
    prefix = "" if fname == "abs" else "math."
    return f"{prefix}{fname}({', '.join(a for a, _ in args)})", "float"


def _wrapper(tr: "Translator", c: Call, text: str, t: Optional[str]) -> "Typed":
    if len(c.args) != 1:
        raise tr.refuse(f"'{text}' with {len(c.args)} arguments", c)
    value, vt = tr.expr(c.args[0])
    return value, t or vt


def _template_call(tr: "Translator", c: Call, fn: Name) -> "Typed":
    text, targs = fn.text, fn.template or ()
    args = tr.arguments(c.args)
    if text == "std::get" and len(targs) == 1 and targs[0].isdigit() and len(args) == 1:
        return f"{tr.operand(c.args[0])[0]}[{targs[0]}]", "Tensor?"
    if text in ("std::tuple", "std::make_tuple"):
        if not args:   # a tuple of undefined tensors
            return "(" + "".join("None, " for _ in targs) + ")", "tuple"
        return "(" + ", ".join(a for a, _ in args) + ("," if len(args) == 1 else "") + ")", "tuple"
    if text == "std::vector" and len(targs) == 1:
        elem = {"c10::SymInt": "int", "int64_t": "int", "Tensor": "Tensor", "at::Tensor": "Tensor",
                "double": "float", "bool": "bool"}.get(targs[0], N.UNKNOWN)
        if not args:
            return "[]", elem + "[]"
        if len(args) == 2:
            return f"[{args[1][0]}] * {_int(tr, c, args[0])}", elem + "[]"
    if text in ("std::optional", "c10::optional", "at::OptionalArrayRef", "c10::OptionalArrayRef"):
        if not args:
            return "None", "None"
        if len(args) == 1:
            return args[0]
    if text == "static_cast" and len(targs) == 1 and len(args) == 1:
        kind = {"double": "float", "float": "float", "int64_t": "int", "int": "int", "bool": "bool"}.get(targs[0])
        if kind is not None:
            return f"{kind}({args[0][0]})", kind
    raise tr.refuse(f"the template call '{text}<{', '.join(targs)}>(...)'", c)


def _int(tr: "Translator", c: Call, arg: "Typed") -> str:
    if N.base(arg[1]) != "int":
        raise tr.refuse(f"a count of type {arg[1]}", c)
    return arg[0] if " " not in arg[0] else f"({arg[0]})"


def aten_call(tr: "Translator", c: Call, callee: N.Callee, args: Sequence["Typed"],
              receiver: Optional["Typed"]) -> "Typed":
    """`callee` with C++'s positional `args` (after the receiver of a method
    call), as Python calls it: arguments that are keyword-only in the schema
    by name, a TensorOptions argument spread into dtype/layout/device."""
    options = [a for a, t in args if t == "TensorOptions"]
    plain = [a for a in args if a[1] != "TensorOptions"]
    if len(options) > 1 or options and args[-1][1] != "TensorOptions":
        raise tr.refuse(f"TensorOptions in the middle of the arguments of '{callee.name}'", c)
    offset = 1 if receiver is not None else 0
    n = len(plain) + offset
    fits = [o for o in callee.overloads if n <= len(o.positional) + len(o.kwarg_only)]
    if not fits:
        raise tr.refuse(f"the call of '{callee.name}' with {n} arguments (no overload takes them)", c)
    # C++ picks the overload by the arguments' types: those known narrow it.
    typed = [o for o in fits if o.accepts([t for _, t in plain], offset)]
    fits = typed or fits
    # ...and, as C++'s exact matches win over conversions (a ScalarType
    # to TensorOptions), an overload taking them all positionally wins.
    fits = [o for o in fits if n <= len(o.positional)] or fits
    texts = [a for a, _ in plain]
    if any(n > len(o.positional) for o in fits):
        # Positions past `*` become keywords: the same names in every
        # overload that could be meant, or C++'s overload resolution would
        # have to be redone.
        named = {tuple((o.positional + o.kwarg_only)[len(o.positional):n]) if n > len(o.positional) else None
                 for o in fits}
        starts = {min(len(o.positional), n) for o in fits}
        if len(named) != 1 or None in named or len(starts) != 1:
            raise tr.refuse(f"the call of '{callee.name}' with {n} arguments (which are keyword-only in "
                            "Python differs between its overloads)", c)
        start = starts.pop() - offset
        keys = named.pop() or ()
        texts = texts[:start] + [f"{k}={v}" for k, v in zip(keys, texts[start:])]
    texts += [f"**{o}" for o in options]
    kinds = {o.returns for o in fits}
    returns = kinds.pop() if len(kinds) == 1 else N.UNKNOWN
    if receiver is not None and python_method(callee.name):
        return f"{receiver[0]}.{callee.name}({', '.join(texts)})", returns
    if receiver is not None:
        return f"torch.ops.aten.{callee.name}({', '.join([receiver[0]] + texts)})", returns
    if callee.python is None:   # a method only: on its first argument
        first, rest = texts[0], texts[1:]
        recv = first if first.isidentifier() else f"({first})"
        return f"{recv}.{callee.name}({', '.join(rest)})", returns
    return f"{callee.python}({', '.join(texts)})", returns


# ATen methods Tensor has no Python method for (Python indexes with []).
_NO_PYTHON_METHOD = frozenset(["slice", "index", "slice_symint", "index_put"])   # (index_put: no None index)


def python_method(name: str) -> bool:
    """Whether torch.Tensor has the ATen method `name` as a Python method
    (private and `_backward` ones are called as ops instead)."""
    return not name.startswith("_") and "backward" not in name and name not in _NO_PYTHON_METHOD
