"""The keys only an extension's op has meaning for, checked and located as
its entry is parsed: `dispatch:` (the kernels the extension writes by hand)
and `view:` (the inverse of a view op).

    - func: myops::row_sum(Tensor self) -> Tensor
      dispatch:
        CPU: row_sum_cpu
        Meta: row_sum_meta

Each dispatch key maps to the name of a kernel in the namespace
`<ns>::native` (like ATen's `at::native`); several keys may share one line
(`CPU, CUDA: kernel`).  The op's generated header declares every named
kernel with the dispatcher's C++ signature and its TU registers each under
its key (emit/op_kernels/dispatch.py), so the hand-written code only defines them.  A
CompositeImplicitAutograd kernel is differentiated through what it calls.
An op without `dispatch:` registers its kernels itself.

    - func: myops::band(Tensor(a) self, int k=0) -> Tensor(a)
      dispatch:
        CompositeExplicitAutograd: band
      view:
        inverse: band_scatter          # myops::native::band_scatter(base, mutated_view, k)

The checks that need the op's derivatives entry too are made where the two
are paired (extension_ops.py); what a view op's kernels are is emit/op_kernels/views.py.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from autograd_scons.base.errors import SpecError
from ..model.extension_op import cpp_identifier
from ..model.native import Dispatch, Held, View
from ..model.schema import FunctionSchema
from .yaml_io import Entry

KEYS = ("CPU", "CUDA", "Meta", "CompositeExplicitAutograd", "CompositeImplicitAutograd")
CIA = "CompositeImplicitAutograd"

# What a ViewFunc and a ViewMeta hold each non-base argument as, by schema
# type; `int[]` from its IntArrayRef with `.vec()`.
_HELD = {"int": "int64_t", "int?": "::std::optional<int64_t>", "bool": "bool", "float": "double"}
_INT_LIST = "::std::vector<int64_t>"
_LIST_FIX = ("declare a list of views as ATen's unbind does, 'Tensor(a -> *) self -> Tensor(a)[]' (with "
             "'Tensor(a) self', opcheck's test_schema fails: 'Argument self is not defined to alias output but "
             "was aliasing')")


def parse_dispatch(path: str, e: Entry, namespace: str, func: FunctionSchema) -> Optional[Dispatch]:
    """The checked `dispatch:` of an extension's entry, None without one."""
    raw = e.data.get("dispatch")
    if raw is None:
        return None
    label = f"{namespace}::{func}"
    if not isinstance(raw, dict) or not raw:
        raise SpecError("'dispatch' must be a mapping of dispatch keys to kernel names, e.g. "
                        "'dispatch: {CPU: my_kernel}'", path, e.line_of("dispatch"), label)
    kernels: list[tuple[str, str]] = []
    lines: list[int] = []
    for ks, name in raw.items():
        line = e.line_of("dispatch", str(ks))
        for k in (x.strip() for x in str(ks).split(",")):
            if k not in KEYS:
                raise SpecError(f"unknown dispatch key '{k}' for an extension op (supported: "
                                f"{', '.join(KEYS)})", path, line, label)
            if any(k == prev for prev, _ in kernels):
                raise SpecError(f"dispatch key '{k}' is given twice", path, line, label)
            if not isinstance(name, str) or not cpp_identifier(name):
                raise SpecError(f"kernel name {name!r} for dispatch key '{k}' is not a C++ identifier "
                                f"(the name of a function in namespace {namespace}::native)", path, line, label)
            kernels.append((k, name))
            lines.append(line)
    d = Dispatch(tuple(kernels), tuple(lines), e.line_of("dispatch"))
    if d.implicit and len(kernels) > 1:
        raise SpecError("CompositeImplicitAutograd cannot be combined with other dispatch keys "
                        "(its kernel runs for every backend)", path, d.line, label)
    return d


def parse_view(path: str, e: Entry, namespace: str, func: FunctionSchema, returns_view: bool,
               dispatch: Optional[Dispatch]) -> Optional[View]:
    """The checked `view:` of an extension's entry; None for an op with no
    view to generate (no aliasing output, or a CompositeImplicitAutograd
    one), or none declared (required only where its kernels are generated:
    extension_ops.py)."""
    return view_declaration(path, e.line_of, namespace, func, returns_view, dispatch, e.data.get("view"))


def view_declaration(path: str, line_of: Callable[[str], int], namespace: str, func: FunctionSchema,
                     returns_view: bool, dispatch: Optional[Dispatch], raw: Any,
                     required: bool = False) -> Optional[View]:
    """`raw` (the value of `view:`, None if absent) checked against the
    schema and `dispatch:`; `line_of(key)` locates a key of the entry.  With
    `required`, a view op without `view:` is refused, saying what to write."""
    label = f"{namespace}::{func}"

    def err(msg: str, line: Optional[int] = None) -> SpecError:
        return SpecError(msg, path, line or line_of("func"), label)
    if not returns_view:
        if raw is not None:
            raise err("'view:' is for an op whose output is a view of an input ('Tensor(a)'); this one returns "
                      "none", line_of("view"))
        return None
    if dispatch is not None and dispatch.implicit:
        if raw is not None:
            raise err("a CompositeImplicitAutograd op's views are those of the ops its kernel calls: nothing to "
                      "generate, drop 'view:'", line_of("view"))
        return None
    if raw is None and not required:
        return None
    base, is_list = _shape(func, err)
    args = tuple(_held(a, err) for a in func.schema_order_arguments()[1:])
    if dispatch is None:
        raise err("a view op needs 'dispatch:' naming its kernel, which returns a view of its first argument "
                  "(it runs below the generated ADInplaceOrView kernel)")
    if raw is None:
        raise err("a view op needs 'view: {inverse: NAME}': NAME is a function you write in "
                  f"{namespace}::native (declared in the op's generated header) that returns the base with a "
                  "mutated view written back, for torch.compile and torch.export")
    line = line_of("view")
    if not isinstance(raw, dict) or set(raw) - {"inverse", "whole_input"}:
        raise err("'view' must be a mapping with 'inverse: NAME' and optionally 'whole_input: true'", line)
    inverse, whole = raw.get("inverse"), raw.get("whole_input", False)
    if not isinstance(inverse, str) or not cpp_identifier(inverse):
        raise err(f"'inverse' must name a function in {namespace}::native (a C++ identifier), not {inverse!r}",
                  line)
    if not isinstance(whole, bool) or (whole and is_list):
        raise err("'whole_input' must be true or false, and false for a list of views (each covers a part)", line)
    return View(inverse, whole, is_list, base, args, line)


def _shape(fs: FunctionSchema, err: Callable[..., SpecError]) -> tuple[str, bool]:
    """(the base's name, whether the output is a list of views), or the error."""
    rets = fs.returns
    if len(rets) != 1 or str(rets[0].type) not in ("Tensor", "Tensor[]") or rets[0].annotation is None:
        raise err("a view op returns one view ('Tensor(a)') or one list of views ('Tensor(a)[]'), and nothing else")
    ann = rets[0].annotation
    args = fs.schema_order_arguments()
    aliased = [a for a in args if a.annotation is not None]
    first = args[0].annotation if args else None
    if first is None or aliased != [args[0]] or str(args[0].type) != "Tensor" or \
            first.alias_set != ann.alias_set or first.is_write:
        raise err(f"a view op's output aliases its first argument, a Tensor annotated '({'|'.join(ann.alias_set)})', "
                  "and no other argument")
    is_list = str(rets[0].type) == "Tensor[]"
    after = first.alias_set_after
    if is_list and after != ("*",):
        raise err(_LIST_FIX)
    if not is_list and after:
        raise err(f"a single view is declared 'Tensor({'|'.join(ann.alias_set)}) {args[0].name}' ('-> *' is for "
                  "lists of views)")
    return args[0].name, is_list


def _held(a: Any, err: Callable[..., SpecError]) -> Held:
    t = str(a.type)
    if t in _HELD:
        return Held(a.name, _HELD[t], False)
    if t.startswith("int[") and t.endswith("]"):
        return Held(a.name, _INT_LIST, True)
    raise err(f"argument '{a.name}' of a view op is a '{t}': a view op's other arguments are held past the call "
              f"(for replay), and may be {', '.join(list(_HELD) + ['int[]'])}")
