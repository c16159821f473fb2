"""An op's fake kernel, autocast and vmap rules in the stable target's
Python module (templates/stable_python/{fake,fake_python,autocast,vmap}.pyt),
with the policies and rule kinds of the C++ target (emit/autocast.py,
emit/vmap.py), registered through torch.library:

- `fake:` (model/transforms.py): `pointwise` (the tensor inputs' broadcast
  shape and promoted dtype), `{like: ARG}`, `{python: module.function}`;
  without it, an op with `vmap: pointwise` gets the pointwise one (its
  outputs follow its broadcast inputs), any other none (its Meta kernel,
  or torch's error naming the missing fake kernel, not a wrong shape);
- `autocast:`: fp32 through register_autocast, the other policies as an
  Autocast kernel of the run-time support;
- `vmap:`: the kinds through register_vmap; a C++ rule (`{rule: NAME}`)
  has no place in a stable-ABI library (no functorch there): refused.
"""

from __future__ import annotations

import ast

from autograd_scons.base.errors import SpecError
from ...model.extension_op import KernelUnit
from ...model.transforms import FAKE_LIKE, FAKE_POINTWISE, FAKE_PYTHON, FP32_APPEND_DTYPE, FP32_SET_OPT_DTYPE, \
    POINTWISE, RULE
from ...templates import load

_LITERALS = {"None": "None", "True": "True", "False": "False", "inf": "float('inf')", "-inf": "float('-inf')",
             "nan": "float('nan')"}


def python_default(a, where) -> str:
    """A schema default as a Python literal."""
    d = a.default
    if d in _LITERALS:
        return _LITERALS[d]
    try:
        value = ast.literal_eval(d)
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, (int, float, str, list)) and not isinstance(value, bool):
        return repr(value)
    raise SpecError(f"the default '{d}' of argument '{a.name}' has no Python spelling in the stable target", *where)


def tuple_of(names) -> str:
    """A Python tuple display of `names`."""
    names = list(names)
    return "()" if not names else f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"


def signature(fs, where) -> str:
    """The kernel's parameters with the schema's defaults (the dispatcher
    leaves out trailing arguments equal to their default)."""
    out, star = [], False
    kw = {a.name for a in fs.arguments.kwarg_only}
    for a in fs.schema_order_arguments():
        if a.name in kw and not star:
            out.append("*")
            star = True
        out.append(a.name if a.default is None else f"{a.name}={python_default(a, where)}")
    return ", ".join(out)


def transform_lines(unit: KernelUnit, names: list[str], where) -> list[str]:
    f = unit.func
    fs = f.func
    qualname = f"{f.namespace}::{fs.name}"
    common = dict(qualname=qualname, stem=unit.stem)
    out = _fake(unit, common, where)
    if f.autocast is not None:
        dtype_arg = "None"
        if any(p == FP32_SET_OPT_DTYPE for _, p in f.autocast.policies):
            dtype_arg = repr(next(a.name for a in reversed(fs.schema_order_arguments())
                                  if str(a.type) == "ScalarType?"))
        r = f.autocast.redispatch
        with_dtype = f"torch.ops.{f.namespace}.{fs.name.name}.{r.overload}" if r is not None else "None"
        for device, policy in f.autocast.policies:
            out += load("stable_python/autocast.pyt").lines(
                common, device=device.lower(), policy=policy, dtype_arg=dtype_arg if policy == FP32_SET_OPT_DTYPE
                else "None", with_dtype=with_dtype if policy == FP32_APPEND_DTYPE else "None")
    v = f.vmap
    if v is not None:
        if v.kind == RULE:
            raise SpecError(f"'vmap: {{rule: {v.rule}}}' names a C++ batch rule, which a stable-ABI library cannot "
                            f"register (the stable ABI has no functorch): use 'pointwise' or 'leading_dims'",
                            f.file, v.line, str(fs))
        n = len(fs.returns)
        out += load("stable_python/vmap.pyt").lines(common, rule=f"_rt.{v.kind}_rule(_{unit.stem}_op, {n})")
    return out


def _fake(unit: KernelUnit, common: dict, where) -> list[str]:
    f = unit.func
    fs = f.func
    fake = f.fake
    kind = fake.kind if fake is not None else (FAKE_POINTWISE if f.vmap is not None and f.vmap.kind == POINTWISE
                                               else None)
    n = len(fs.returns)
    if kind is None:
        return []
    named = fake.name if fake is not None and fake.name is not None else ""
    if kind == FAKE_PYTHON:
        return load("stable_python/fake_python.pyt").lines(common, function=named)
    if kind == FAKE_LIKE:
        value = f"_rt.like({named}, {n})"
    else:
        tensors = [a.name for a in fs.schema_order_arguments() if str(a.type) in ("Tensor", "Tensor?")]
        value = f"_rt.broadcast_like({tuple_of(tensors)}, {n})"
    return load("stable_python/fake.pyt").lines(common, signature=signature(fs, where), value=value)
