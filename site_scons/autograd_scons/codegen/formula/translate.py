"""The printer: a formula's tree (syntax.py) as one Python expression, each
value's type tracked (names.py's vocabulary) so that what depends on it
(integer division, `.conj()` of a Scalar, an undefined Tensor) is spelled
right, or refused where the type is not known.  See the package docstring
for the API and the table."""

from __future__ import annotations

import ast as pyast
from typing import TYPE_CHECKING, Collection, Mapping, Optional, Union

from autograd_scons.base.errors import FormulaError
from . import names as N
from .syntax import (Binary, Braces, Call, Cast, Conditional, Index, Member, Name, Node, Number,
                     String, Unary, parse)

if TYPE_CHECKING:
    from .user_helpers import HelperModule

# Unqualified C++ math functions of numbers -> Python's math module.
_MATH = {"sqrt", "exp", "log", "pow", "abs", "fabs", "sin", "cos", "tan", "log1p", "expm1", "floor", "ceil"}
_ARITH = {"+", "-", "*", "/", "%"}
_PY_OPS = {"&&": "and", "||": "or"}

Typed = tuple[str, str]   # (Python text, vocabulary type)


def _atomic(text: str) -> bool:
    """Whether printed Python binds as one operand anywhere (a name, a call,
    an attribute, a subscript, a literal): our own output, parsed back."""
    try:
        tree = pyast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    if isinstance(tree, pyast.Constant):
        return not (isinstance(tree.value, (int, float)) and text.startswith("-"))
    return isinstance(tree, (pyast.Name, pyast.Call, pyast.Attribute, pyast.Subscript, pyast.List)) or \
        isinstance(tree, pyast.Tuple) and text.startswith("(")


class Translator:
    def __init__(self, formula: str, variables: Mapping[str, str], helpers: Mapping[str, str],
                 functions: Mapping[str, N.Callee], helper_prefix: str,
                 own_helpers: "Optional[HelperModule]" = None, own_prefix: str = ""):
        self.formula = formula
        self.variables, self.helpers, self.functions = variables, helpers, functions
        self.helper_prefix = helper_prefix
        # The extension's own helper module (python_helpers=), if named.
        self.own_helpers, self.own_prefix = own_helpers, own_prefix

    def refuse(self, what: str, node: Node) -> FormulaError:
        return FormulaError(f"cannot translate {what} (column {node.col + 1} of '{self.formula}')")

    # -- dispatch on the node
    def expr(self, node: Node) -> Typed:
        method = getattr(self, "_" + type(node).__name__.lower())
        return method(node)

    def operand(self, node: Node) -> Typed:
        """An operand of an operator: parenthesized unless atomic."""
        text, t = self.expr(node)
        return (text if _atomic(text) else f"({text})"), t

    def _number(self, n: Number) -> Typed:
        text = n.text
        if not n.is_int:
            text = text + "0" if text.endswith(".") else ("0" + text if text.startswith(".") else text)
        return text, "int" if n.is_int else "float"

    def _string(self, s: String) -> Typed:
        return repr(s.value), "str"

    def _name(self, n: Name) -> Typed:
        text = n.text
        if n.template is not None:
            raise self.refuse(f"the template '{text}<{', '.join(n.template)}>' outside a call", n)
        if len(n.parts) == 1 and text in self.variables:
            return text, self.variables[text]
        if text in N.CONSTANTS:
            return N.CONSTANTS[text]
        if len(n.parts) == 1:
            raise self.refuse(f"the name '{text}' (not an input, output, gradient or known constant)", n)
        raise self.refuse(f"the qualified name '{text}'", n)

    def _braces(self, b: Braces) -> Typed:
        items = [self.expr(x) for x in b.items]
        types = {t for _, t in items}
        elem = types.pop() if len(types) == 1 else N.UNKNOWN
        return "[" + ", ".join(x for x, _ in items) + "]", (elem + "[]" if elem != N.UNKNOWN else N.UNKNOWN)

    def _cast(self, c: Cast) -> Typed:
        text, t = self.expr(c.operand)
        if c.type in ("double", "float"):
            return f"float({text})", "float"
        if c.type in ("int", "int64_t", "long"):
            return f"int({text})", "int"
        if c.type == "bool":
            return f"bool({text})", "bool"
        raise self.refuse(f"the cast to '{c.type}'", c)

    def _conditional(self, c: Conditional) -> Typed:
        test, _ = self.operand(c.test)
        then, t1 = self.operand(c.then)
        orelse, t2 = self.operand(c.orelse)
        if t1 == t2:
            t = t1
        elif "None" in (t1, t2):
            other = t2 if t1 == "None" else t1
            t = other if other.endswith("?") or other == N.UNKNOWN else other + "?"
        elif {N.base(t1), N.base(t2)} <= {"int", "float"}:
            t = "float"
        else:
            t = t1 if N.is_tensor(t1) and N.is_tensor(t2) else N.UNKNOWN
        return f"{then} if {test} else {orelse}", t

    def _unary(self, u: Unary) -> Typed:
        text, t = self.operand(u.operand)
        if u.op == "!":
            if N.is_tensor(t):
                return f"torch.logical_not({text})", "Tensor"
            return f"not {text}", "bool"
        return f"{u.op}{text}", ("int" if t == "bool" and u.op == "-" else t)

    def _binary(self, b: Binary) -> Typed:
        left, lt = self.operand(b.left)
        right, rt = self.operand(b.right)
        op = b.op
        tensor = N.is_tensor(lt) or N.is_tensor(rt)
        if op in ("&&", "||"):
            if tensor:
                raise self.refuse(f"'{op}' of a Tensor", b)
            return f"{left} {_PY_OPS[op]} {right}", "bool"
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return f"{left} {op} {right}", "Tensor" if tensor else "bool"
        if op in ("<<", ">>") and not tensor:
            raise self.refuse(f"the shift '{op}'", b)
        if tensor:
            return f"{left} {op} {right}", "Tensor"
        kinds = {N.base(lt), N.base(rt)}
        if op in ("/", "%"):
            if kinds <= {"int", "bool"}:
                # C++ divides integers truncating, Python's // floors: equal
                # for the sizes and counts formulas divide (never negative).
                return f"{left} {'//' if op == '/' else '%'} {right}", "int"
            if op == "/" and kinds <= {"int", "float", "bool"} and "float" in kinds:
                return f"{left} / {right}", "float"
            raise self.refuse(f"the division '{op}' of values of types {lt} and {rt} "
                              "(integer or true division cannot be told)", b)
        if kinds <= {"int", "bool"}:
            return f"{left} {op} {right}", "int"
        if kinds <= {"int", "float", "bool"}:
            return f"{left} {op} {right}", "float"
        if "Scalar" in kinds and kinds <= {"Scalar", "int", "float", "bool"} and op in _ARITH:
            return f"{left} {op} {right}", "Scalar"
        if op in ("&", "|", "^") and kinds <= {"bool"}:
            return f"{left} {op} {right}", "bool"
        raise self.refuse(f"the operator '{op}' on values of types {lt} and {rt}", b)

    def _index(self, x: Index) -> Typed:
        obj, t = self.operand(x.obj)
        index, it = self.expr(x.index)
        if N.base(it) not in ("int", "bool"):
            raise self.refuse(f"the index '[{index}]' of type {it}", x)
        elem = N.base(t)[:-2] if N.base(t).endswith("[]") else ("int" if N.base(t) == "tuple" else N.UNKNOWN)
        if t == "Tensor[]" and obj == "grads":
            elem = "Tensor?"
        return f"{obj}[{index}]", elem

    def _member(self, m: Member) -> Typed:
        raise self.refuse(f"the member '{'->' if m.arrow else '.'}{m.name}' outside a call", m)

    def _call(self, c: Call) -> Typed:
        if isinstance(c.fn, Member):
            from .methods import method_call
            return method_call(self, c, c.fn)
        if not isinstance(c.fn, Name):
            raise self.refuse("a call of a computed function", c)
        from .calls import function_call
        return function_call(self, c, c.fn)

    def arguments(self, args: tuple[Node, ...]) -> list[Typed]:
        return [self.expr(a) for a in args]


def translate(formula: str, *, inputs: Mapping[str, str], outputs: Mapping[str, str] = {},
              helpers: Union[Mapping[str, str], Collection[str]] = (),
              functions: Optional[Mapping[str, N.Callee]] = None, helper_prefix: str = "",
              extra: Mapping[str, str] = {}, own_helpers: "Optional[HelperModule]" = None,
              own_prefix: str = "") -> str:
    """`formula` (C++ as derivatives.yaml writes it) as one Python expression.
    See the package docstring."""
    return translate_typed(formula, inputs=inputs, outputs=outputs, helpers=helpers, functions=functions,
                           helper_prefix=helper_prefix, extra=extra, own_helpers=own_helpers,
                           own_prefix=own_prefix)[0]


def translate_typed(formula: str, *, inputs: Mapping[str, str], outputs: Mapping[str, str] = {},
                    helpers: Union[Mapping[str, str], Collection[str]] = (),
                    functions: Optional[Mapping[str, N.Callee]] = None, helper_prefix: str = "",
                    extra: Mapping[str, str] = {}, own_helpers: "Optional[HelperModule]" = None,
                    own_prefix: str = "") -> Typed:
    """translate() with the vocabulary type of the result."""
    variables = gradient_variables(inputs, outputs)
    variables.update(extra)
    if not isinstance(helpers, Mapping):
        helpers = {h: "Tensor" for h in helpers}
    tree = parse(formula)
    return Translator(formula, variables, helpers, functions or {}, helper_prefix, own_helpers,
                      own_prefix).expr(tree)


def gradient_variables(inputs: Mapping[str, str], outputs: Mapping[str, str]) -> dict[str, str]:
    """Every name a formula may read: the inputs and outputs (typed), the
    incoming gradients, the tangents and primals of tensor inputs."""
    v: dict[str, str] = {"grad": "Tensor", "grads": "Tensor[]", "grad_input_mask": "bool[]",
                         "retain_variables": "bool"}
    for name, t in inputs.items():
        v[name] = t
        if N.is_tensor(t) or N.base(t) in ("Tensor[]", "Tensor?[]"):
            v[f"{name}_t"] = t
            v[f"{name}_p"] = t
    if "self" in inputs and N.is_tensor(inputs["self"]):
        # an in-place op's forward formula: self before the op wrote it
        v.setdefault("original_self_t", inputs["self"])
        v.setdefault("original_self_p", inputs["self"])
    for name, t in outputs.items():
        v[name] = t
        if N.is_tensor(t):
            v[f"grad_{name}"] = "Tensor"
            v.setdefault(f"{name}_t", t)
            v.setdefault(f"{name}_p", t)
    return v
