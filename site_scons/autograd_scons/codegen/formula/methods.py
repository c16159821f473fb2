"""Method calls (`x.name(args)`), by the receiver's type: a Tensor's are
ATen methods (some renamed, some Python attributes), a Scalar's, an
optional's and a size list's are Python operations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import names as N
from .calls import aten_call, lookup
from .syntax import Call, Member

if TYPE_CHECKING:
    from .translate import Translator, Typed


def method_call(tr: "Translator", c: Call, m: Member) -> "Typed":
    recv, t = tr.operand(m.obj)
    if m.arrow and not t.endswith("?"):
        # `opt->f()` is the optional's value's member (Python's optional is
        # the value itself); any other `->` is a pointer's.
        raise tr.refuse(f"the member access '->{m.name}' (a pointer's member)", m)
    if m.arrow:
        t = N.base(t)
    args = tr.arguments(c.args)
    b = N.base(t)
    if m.name in ("has_value", "defined") and (t.endswith("?") or b == "Tensor"):
        if args:
            raise tr.refuse(f"'.{m.name}()' with arguments", c)
        return f"{recv} is not None", "bool"
    if t.endswith("?") and m.name == "value" and not args:
        return recv, b
    if t.endswith("?") and m.name == "value_or" and len(args) == 1:
        return f"({recv} if {recv} is not None else {args[0][0]})", b
    if b == "Tensor":
        return _tensor_method(tr, c, m, (recv, t), args)
    if b == "Scalar":
        return _scalar_method(tr, c, m, recv, args)
    if b == "TypeAndSize" and m.name == "zeros" and not args:
        return f"torch.zeros({recv}.shape, dtype={recv}.dtype, device={recv}.device)", "Tensor"
    if b == "ScalarType" and m.name in ("isComplex",) and not args:
        return f"{recv}.is_complex", "bool"
    if b.endswith("[]") and not args:
        if m.name == "size":
            return f"len({recv})", "int"
        if m.name == "empty":
            return f"len({recv}) == 0", "bool"
        if m.name == "back":
            return f"{recv}[-1]", b[:-2]
        if m.name == "vec":
            return f"list({recv})", b
    raise tr.refuse(f"the method '.{m.name}()' of a value of type {t}", m)


def _tensor_method(tr: "Translator", c: Call, m: Member, recv: "Typed", args: list) -> "Typed":
    name = m.name
    if name in N.TENSOR_PROPERTIES and not args:
        attr, t = N.TENSOR_PROPERTIES[name]
        return f"{recv[0]}.{attr}", t
    if name == "options" and not args:
        r = recv[0]
        return f"dict(dtype={r}.dtype, layout={r}.layout, device={r}.device)", "TensorOptions"
    if name in N.TENSOR_METHODS:
        py, t = N.TENSOR_METHODS[name]
        if name in ("size", "sym_size", "stride", "sym_stride") and len(args) != 1:
            raise tr.refuse(f"'.{name}()' without a dimension", m)
        return f"{recv[0]}.{py}({', '.join(a for a, _ in args)})", t
    callee = lookup(tr, name)
    if callee is None:
        raise tr.refuse(f"the Tensor method '.{name}()' (no ATen function of that name)", m)
    if not callee.method:
        raise tr.refuse(f"the Tensor method '.{name}()' (ATen has no method variant)", m)
    return aten_call(tr, c, callee, args, receiver=recv)


def _scalar_method(tr: "Translator", c: Call, m: Member, recv: str, args: list) -> "Typed":
    if args:
        raise tr.refuse(f"the Scalar method '.{m.name}()' with arguments", m)
    if m.name == "conj":
        return f"{recv}.conjugate()", "Scalar"
    if m.name in ("toDouble", "toFloat"):
        return f"float({recv})", "float"
    if m.name in ("toLong", "toInt"):
        return f"int({recv})", "int"
    if m.name == "toComplexDouble":
        return f"complex({recv})", "Scalar"
    if m.name == "isComplex":
        return f"isinstance({recv}, complex)", "bool"
    raise tr.refuse(f"the Scalar method '.{m.name}()'", m)
