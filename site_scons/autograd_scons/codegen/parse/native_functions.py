"""native_functions.yaml as records: one `NativeFunction` per `func:`, plus the
variants the codegen derives (functional/out= siblings), grouped the way
derivative matching needs them.
"""

from __future__ import annotations

import dataclasses
import re
import string
from typing import Optional, Sequence

from autograd_scons.base.errors import FormulaError, SpecError
from ..model.schema import (FUNCTIONAL, INPLACE, MUTABLE, OUT, Annotation, Argument, Arguments,
                    BaseType, FunctionSchema, OperatorName, Return, SchemaError,
                    check_name, is_tensor_like)
from ..model.extension_op import dispatcher_signature
from ..model.native import _CIA, NativeFunction, NativeSpec, ViewGroup
from .entry_keys import check_keys
from .extension_keys import parse_dispatch, parse_view
from .transform_keys import parse_autocast, parse_fake, parse_vmap, resolve_redispatch
from .yaml_io import Entry, load_entries, read_text

# A quirk of ATen's own spec: this in-place op's schema cannot be paired with
# derived functional/out= variants, so none are derived for it.
_INPLACE_NOT_GROUPABLE = frozenset({"polygamma_"})

_NS_RE = re.compile(r"^(\w+)::(.*)$", re.S)


# ------------------------------------------------------------------ parsing


def load_tags(path: Optional[str]) -> Optional[set[str]]:
    if path is None:
        return None
    tags: set[str] = set()
    for e in load_entries(path, read_text(path)):
        t = e.data.get("tag")
        if not isinstance(t, str):
            raise SpecError("every entry needs a 'tag: NAME' string", path, e.line)
        tags.add(t)
    return tags


def split_namespace(raw: str) -> tuple[str, str]:
    """(op namespace, schema) of a `func:` string: `ns::schema`, else ATen's."""
    m = _NS_RE.match(raw)
    return (m.group(1), m.group(2)) if m else ("aten", raw)


def first_op_namespace(path: str) -> str:
    """The op namespace of the file's first `func:`, read as the parse reads
    it (any yaml style); "aten" for a file without one.  (load() returns
    `torch.ops.<it>`.)"""
    for e in load_entries(path, read_text(path)):
        raw = e.data.get("func")
        if isinstance(raw, str):
            return split_namespace(raw)[0]
    return "aten"


def parse_native_functions(path: str, text: str, valid_tags: Optional[set[str]]) -> NativeSpec:
    parsed = [_parse_entry(path, e, valid_tags) for e in load_entries(path, text)]
    _check_namespace_written(path, parsed)
    funcs = resolve_redispatch(parsed)
    funcs += _derived_variants(funcs)
    funcs += _view_copies(funcs)
    groups = _group_by_view(funcs)
    ordered: list[NativeFunction] = []
    for g in groups:
        ordered.extend(g.functions() if isinstance(g, ViewGroup) else [g])
    return NativeSpec(funcs, ordered, [g for g in groups if isinstance(g, ViewGroup)])


def _check_namespace_written(path: str, funcs: Sequence[NativeFunction]) -> None:
    """In a file of extension ops, each `func:` names its namespace: one
    without is ATen's (torch's own native_functions.yaml writes none), and
    an extension does not register ATen ops, so the op would lose its
    registration and kernel without a word.  `aten::` written out stays an
    ATen op."""
    extension = next((f for f in funcs if f.namespace != "aten"), None)
    if extension is None:
        return   # torch's own file, or one of ATen ops alone: a bare name is ATen's
    for f in funcs:
        raw = f.raw.get("func")
        if isinstance(raw, str) and _NS_RE.match(raw.strip()) is None:
            raise SpecError(f"'func:' has no namespace, so '{f.func.name}' would be an ATen op, which an extension "
                            f"does not register: write '{extension.namespace}::{f.func.name}(...)' as the file's "
                            f"other ops (line {extension.line}), or 'aten::{f.func.name}(...)' for an ATen op",
                            path, f.line, raw)


def _parse_entry(path: str, e: Entry, valid_tags: Optional[set[str]]) -> NativeFunction:
    d = e.data
    raw = d.get("func")
    label = raw if isinstance(raw, str) else None

    def err(msg: str, key: Optional[str] = None) -> SpecError:
        return SpecError(msg, path, e.line_of(key) if key else e.line, label)

    if not isinstance(raw, str):
        raise err("every entry needs a 'func:' schema string", "func" if "func" in d else None)
    namespace, schema = split_namespace(raw)
    try:
        check_name(namespace, "namespace")
        func = FunctionSchema.parse(schema)
    except SchemaError as ex:
        raise err(f"bad schema: {ex}", "func") from None
    check_keys(path, e, namespace, raw)

    variants = d.get("variants", "function")
    if not isinstance(variants, str) or not set(variants.split(", ")) <= {"function", "method"}:
        raise err(f"'variants' must be 'function', 'method' or 'function, method', not {variants!r}",
                  "variants")
    tags = d.get("tags", [])
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise err("'tags' must be a tag name or a list of tag names", "tags")
    if valid_tags is not None:
        unknown = [t for t in tags if t not in valid_tags]
        if unknown:
            raise err(f"unknown tag '{unknown[0]}' (not in the tags file)", "tags")
    autogen = d.get("autogen", "")
    if not isinstance(autogen, str):
        raise err("'autogen' must be a comma-separated string", "autogen")
    for key in ("structured", "manual_cpp_binding", "use_const_ref_for_mutable_tensors"):
        if not isinstance(d.get(key, False), bool):
            raise err(f"'{key}' must be True or False", key)
    delegate = d.get("structured_delegate")
    if delegate is not None and not isinstance(delegate, str):
        raise err("'structured_delegate' must be an operator name", "structured_delegate")

    dispatch = d.get("dispatch")
    keys: set[str] = set()
    if dispatch is not None:
        if not isinstance(dispatch, dict):
            raise err("'dispatch' must be a mapping of dispatch keys to kernels", "dispatch")
        for ks in dispatch:
            keys.update(k.strip() for k in str(ks).split(","))
    elif not d.get("structured", False) and delegate is None:
        keys.add(_CIA)  # no kernels named: it decomposes

    f = NativeFunction(
        func=func, namespace=namespace, file=path, line=e.line,
        variants=frozenset(variants.split(", ")),
        use_const_ref_for_mutable_tensors=d.get("use_const_ref_for_mutable_tensors", False),
        structured=d.get("structured", False), structured_delegate=delegate,
        manual_cpp_binding=d.get("manual_cpp_binding", False),
        tags=frozenset(tags),
        autogen=tuple(x for x in autogen.split(", ") if x),
        dispatch_keys=frozenset(keys), raw=d)
    if namespace == "aten":
        return f
    try:   # an extension op's kernels are declared with it: every type must have a C++ spelling
        dispatcher_signature(f)
    except FormulaError as ex:
        raise err(f"its kernels cannot be declared: {ex}", "func") from None
    ext_dispatch = parse_dispatch(path, e, namespace, func)
    return dataclasses.replace(f, dispatch=ext_dispatch,
                               view=parse_view(path, e, namespace, func, f.returns_view, ext_dispatch),
                               autocast=parse_autocast(path, e, namespace, func, f.returns_view),
                               vmap=parse_vmap(path, e, namespace, func), fake=parse_fake(path, e, namespace, func))


# ------------------------------------------------ derived functional/out=


def _derived_variants(funcs: Sequence[NativeFunction]) -> list[NativeFunction]:
    """The functional and out= variants the codegen adds when an operator
    lacks them (e.g. `rrelu_with_noise_functional`), in a stable order."""
    by_sig: dict[str, dict[str, NativeFunction]] = {}
    for f in funcs:
        d = by_sig.setdefault(f.func.signature_key, {})
        k = f.func.kind()
        if k in d:
            raise SpecError(f"two {k} variants share one signature: '{d[k].func}' (line "
                            f"{d[k].line}) and this one", f.file, f.line, str(f.func))
        d[k] = f
    out: list[NativeFunction] = []
    for d in by_sig.values():
        fs = list(d.values())
        if all(f.manual_cpp_binding for f in fs):
            continue
        if any(f.is_view_op and f.func.name.name != "set_" for f in fs):
            continue
        is_core = any("core" in f.tags for f in fs)
        if all(f.has_composite_implicit_autograd_kernel for f in fs) and not is_core:
            continue
        has_out = OUT in d
        if has_out and len(d) == 1:
            continue
        if INPLACE in d and str(d[INPLACE].func.name) in _INPLACE_NOT_GROUPABLE:
            continue
        base = d.get(MUTABLE) or d.get(INPLACE) or d.get(OUT) or d[FUNCTIONAL]
        base_ok = base.func.kind() == INPLACE or any(is_tensor_like(r.type) for r in base.func.returns)
        gets_out = not has_out and base_ok and any("out" in op for op in base.autogen)
        if gets_out:
            out.append(_derive(base, OUT))
        if FUNCTIONAL not in d and (has_out or gets_out):
            out.append(_derive(base, FUNCTIONAL))
    return out


def _out_overload(overload: str) -> str:
    return f"{overload}_out" if overload else "out"


def _out_args_from_returns(func: FunctionSchema) -> tuple[list[Return], list[Argument]]:
    used = {x for a in func.arguments.flat_all if a.annotation for x in a.annotation.alias_set}
    letters = [c for c in string.ascii_lowercase if c not in used]
    all_tensors = all(r.type == BaseType("Tensor") for r in func.returns)
    rets: list[Return] = []
    outs: list[Argument] = []
    for i, r in enumerate(func.returns):
        if is_tensor_like(r.type):
            a = Argument("out" if len(func.returns) == 1 else f"out{i}", r.type, None,
                         Annotation.parse(f"{letters[i]}!"))
            outs.append(a)
            if all_tensors:
                rets.append(Return(None, a.type, a.annotation))
        else:
            rets.append(r)
    return rets, outs


def _derive(f: NativeFunction, kind: str) -> NativeFunction:
    fs = f.func
    n = fs.name
    if kind == FUNCTIONAL:
        func = fs.signature(keep_return_names=True).with_name(
            OperatorName(n.base, False, n.dunder, fs.kind() == MUTABLE, n.overload))
        tags = {"generated"}
    else:
        out_name = OperatorName(n.base, False, n.dunder, False, _out_overload(n.overload))
        a = fs.arguments
        if fs.kind() == INPLACE:
            s = a.self_arg
            if s is None:   # (an in-place schema without self is refused as it is parsed)
                raise ValueError(f"in-place '{fs}' has no self argument")
            pos = tuple(Argument(x.name, x.type, x.default, None) if x is s else x for x in a.positional)
            args = Arguments(pos, a.kwarg_only, (Argument("out", s.type, None, s.annotation),))
            func = FunctionSchema(out_name, args, fs.returns)
        else:
            rets, outs = _out_args_from_returns(fs)
            base_args = a if fs.kind() == MUTABLE else fs.signature().arguments
            func = FunctionSchema(out_name, Arguments(base_args.positional, base_args.kwarg_only,
                                                      tuple(outs)), tuple(rets))
        tags = {"generated", "out"}
    tags |= f.tags & {"nondeterministic_seeded", "view_copy", "pt2_compliant_tag"}
    return NativeFunction(func=func, namespace=f.namespace, file=f.file, line=f.line,
                          use_const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
                          tags=frozenset(tags), dispatch_keys=frozenset({"CompositeExplicitAutograd"}),
                          generated=True)


def _view_copies(funcs: Sequence[NativeFunction]) -> list[NativeFunction]:
    """The `{view}_copy` twin of each extension op that returns a view and
    has kernels of its own (not CompositeImplicitAutograd): the view's schema
    without alias annotations, whose kernels the generator writes
    (emit/op_kernels/views.py).  ATen's specs declare their twins themselves."""
    by_name = {(f.namespace, str(f.func.name)): f for f in funcs}
    out: list[NativeFunction] = []
    for f in funcs:
        if f.namespace == "aten" or not f.returns_view or _CIA in f.dispatch_keys:
            continue
        fs, n = f.func, f.func.name
        strip = lambda a: Argument(a.name, a.type, a.default, None)  # noqa: E731
        func = FunctionSchema(OperatorName(f"{n.name}_copy", overload=n.overload),
                              Arguments(tuple(map(strip, fs.arguments.positional)),
                                        tuple(map(strip, fs.arguments.kwarg_only)), ()),
                              tuple(Return(r.name, r.type, None) for r in fs.returns))
        label = f"{f.namespace}::{fs}"
        other = by_name.get((f.namespace, str(func.name)))
        if other is not None:
            raise SpecError(f"'{f.namespace}::{func.name}' is generated as the copy of the view '{label}' "
                            f"(line {f.line}): remove this entry, or rename one of them",
                            other.file, other.line, f"{other.namespace}::{other.func}")
        if func.view_signature_key != fs.view_signature_key:
            raise SpecError(f"a view's name cannot contain '_copy' (its generated twin '{func.name}' would "
                            f"not pair with it): rename it", f.file, f.line, label)
        out.append(NativeFunction(func=func, namespace=f.namespace, file=f.file, line=f.line,
                                  tags=frozenset({"generated", "view_copy"}),
                                  dispatch_keys=frozenset({"CompositeExplicitAutograd"}), generated=True))
    return out


# ------------------------------------------------------------ view groups


def _group_by_view(funcs: Sequence[NativeFunction]) -> list:
    """Functions grouped by their view signature (`x_copy` pairs with `x`):
    each group yields its ViewGroup (view, view_inplace, view_copy) first,
    then its other functions in order."""
    groups: dict[str, dict[str, NativeFunction]] = {}
    for f in funcs:
        d = groups.setdefault(f.func.view_signature_key, {})
        k = f.view_kind
        if k == "non_aliasing":
            k = f.func.kind()
        if k in d:
            raise SpecError(f"'{d[k].func}' (line {d[k].line}) and this function are both "
                            f"{k.replace('_', ' ')} variants of one view signature",
                            f.file, f.line, str(f.func))
        d[k] = f
    out: list = []
    for d in groups.values():
        if "aliasing" in d:
            out.append(ViewGroup(d.pop("aliasing"), d.pop(FUNCTIONAL, None),
                                 d.pop("aliasing_inplace", None)))
        out.extend(d.values())
    return out
