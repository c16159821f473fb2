"""Extension ops that return views, with ATen's view semantics (the
declaration, `view:`, is parsed and checked by parse/extension_keys.py).

    - func: myops::band(Tensor(a) self, int k=0) -> Tensor(a)
      dispatch:
        CompositeExplicitAutograd: band
      view:
        inverse: band_scatter          # myops::native::band_scatter(base, mutated_view, k)
    - func: myops::rows(Tensor(a -> *) self) -> Tensor(a)[]
      dispatch:
        CompositeExplicitAutograd: rows
      view:
        inverse: rows_scatter          # (base, mutated_view, view_idx): one row written back

The hand-written kernel returns a view of its first argument (the base:
`as_strided`, or ATen's views).  Besides the op's Autograd kernel, which
for a view redispatches below Autograd only (so that the next kernel runs),
the op's TU gets what torchgen writes for ATen's views, through the
exported API of libtorch:

- an ADInplaceOrView kernel: `as_view` of the base, with the creation meta
  (no_grad, inference mode, several outputs) and, where the base cannot be
  replayed by `as_strided` or view replay is on (AOTAutograd), a `ViewFunc`
  and a reverse view function;
- a Functionalize kernel: the view (or its `_copy`) of the unwrapped base,
  wrapped with a `ViewMeta` whose reverse is the declared inverse, which
  returns the base with the mutated view written back (never aliasing the
  base); for a view of all of its input (`whole_input: true`) the inverse is
  a view of the mutated view instead, also used as autograd's reverse view
  function.

The `{view}_copy` op (parse/native_functions.py derives its schema) gets a
generated CompositeExplicitAutograd kernel (the view, cloned) and the
view's formulas.  Forward AD needs nothing more: `auto_linear` calls the op
on the tangent, whose result is then the same view of the base's tangent.
"""

from __future__ import annotations

from ...model.native import NativeFunction, View
from ...templates import load


# ------------------------------------------------------------------ render


def inverse_declaration(f: NativeFunction, view: View, params: list[str]) -> str:
    """The hand-written inverse's declaration, for the op's header: the base,
    the mutated view, (for a list) which element, then the op's arguments."""
    names = [a.name for a in f.func.schema_order_arguments()[1:]]
    rest = [f"{t} {n}" for t, n in zip(params[1:], names)]
    index = ["int64_t view_idx"] if view.is_list else []
    return f"at::Tensor {view.inverse}({', '.join([f'{params[0]} base', f'{params[0]} mutated_view'] + index + rest)});"


def view_kernels(unit, view: View, ret: str, params: list[str], decl: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The view's pieces in its op TU (after the Autograd kernel, in the
    anonymous namespace), and the (dispatch key, kernel) pairs they add."""
    f, stem = unit.func, unit.stem
    n = f.func.name
    names = [a.name for a in f.func.schema_order_arguments()]
    held = view.args
    tail = lambda xs: "".join(f", {x}" for x in xs)  # noqa: E731
    members = tail(f"{h.name}_" for h in held)
    element = "[view_idx]" if view.is_list else ""
    func_ctor = (["int64_t view_idx"] if view.is_list else []) + [f"{h.cpp} {h.name}_" for h in held]
    func_inits = (["view_idx(view_idx)"] if view.is_list else []) + [f"{h.name}_({h.name}_)" for h in held]
    member_decls = [f"{h.cpp} {h.name}_;" for h in held]
    signature = f"{ret}({', '.join(params)})"
    native = f"::{f.namespace}::native::{view.inverse}(base, mutated_view{', view_idx' if view.is_list else ''}{members})"
    inverse_params = (", int64_t view_idx" if view.is_list else "") + tail(f"{t} {h.name}_" for t, h in zip(params[1:], held))
    owned = [h.owned for h in held]
    common = dict(stem=stem, ret=ret, params=decl, base=view.base, args=", ".join(names))
    out = load("view_handles.cpp").lines(stem=stem, signature=signature, name=f"{f.namespace}::{n.name}",
                                         copy_name=f"{f.namespace}::{n.name}_copy", overload=n.overload)
    out += load("view_func.cpp").lines(
        stem=stem, ctor_params=", ".join(func_ctor), ctor_inits=(" : " + ", ".join(func_inits)) if func_inits else "",
        members=members, element=element, ctor_args=", ".join((["view_idx"] if view.is_list else [])
                                                               + [f"{h.name}_" for h in held]),
        member_decls=(["int64_t view_idx;"] if view.is_list else []) + member_decls)
    out += load("view_inverse_whole_input.cpp" if view.whole_input else "view_inverse.cpp").lines(
        stem=stem, params=inverse_params, inverse=native)
    captures = ", ".join([view.base] + [f"{h.name} = {h.name}.vec()" if h.vec else h.name for h in held])
    check = load("view_alias_check.cpp").lines(base=view.base, result="_tmp[_i]" if view.is_list else "_tmp",
                                                op=f"{f.namespace}::{n}")
    out += load("view_list_ad_inplace_or_view.cpp" if view.is_list else "view_ad_inplace_or_view.cpp").lines(
        common, func_args=tail(owned) if view.is_list else ", ".join(owned), captures=captures,
        inverse_args=tail(h.name for h in held), alias_check=check)
    to_out = load("view_meta_to_out_index.cpp").lines(stem=stem, members=members) if view.is_list else []
    out += load("view_meta.cpp").lines(
        stem=stem, ctor_params=tail(f"{h.cpp} {h.name}_" for h in held),
        ctor_inits=tail(f"{h.name}_({h.name}_)" for h in held), multi_output="true" if view.is_list else "false",
        members=members, element="[out_index]" if view.is_list else "", index=", out_index" if view.is_list else "",
        to_out_index=to_out, member_decls=member_decls)
    wrap = load("view_list_wrap.cpp" if view.is_list else "view_wrap.cpp").lines(base=view.base)
    out += load("view_functionalize.cpp").lines(
        common, unwrapped_args=", ".join(["_base_value"] + names[1:]), meta_args=tail(owned), wrap=wrap)
    return out, [("ADInplaceOrView", f"{stem}_ad_inplace_or_view"), ("Functionalize", f"{stem}_functionalize")]


def copy_kernel(unit, ret: str, params: list[str], decl: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The generated kernel of a view's `_copy` twin (`unit.copy_of` is the
    view): the view through the dispatcher, each result cloned."""
    f, view = unit.func, unit.copy_of
    args = ", ".join(a.name for a in f.func.schema_order_arguments())
    is_list = str(f.func.returns[0].type) == "Tensor[]"
    body = load("view_list_copy_body.cpp" if is_list else "view_copy_body.cpp").lines(args=args)
    lines = load("view_copy_kernel.cpp").lines(
        op=f"{f.namespace}::{f.func.name}", view=f"{view.namespace}::{view.func.name.name}",
        overload=view.func.name.overload, signature=f"{ret}({', '.join(params)})", stem=unit.stem, ret=ret,
        params=decl, body=body)
    return lines, [("CompositeExplicitAutograd", f"{unit.stem}_composite")]
