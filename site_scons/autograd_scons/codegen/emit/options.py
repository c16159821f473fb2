"""What the caller chooses about the generated C++."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable, Optional

from autograd_scons.base.errors import OptionError, SpecError

_NAMESPACE_RE = re.compile(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*")
LIBTORCH_NAMESPACE = "torch::autograd::generated"
# The classes' namespace for specs whose ops are all ATen's (torch's own).
ATEN_SPECS_NAMESPACE = "autograd_ext::generated"

# The backward helpers PyTorch's own derivatives.yaml formulas call
# (`handle_r_to_c`, `not_implemented`, ... in `details::`). Pass this as
# `includes` when generating from torch's specs; a user's own specs name
# their own helper headers instead.
TORCH_MANUAL_INCLUDES: tuple[str, ...] = ("torch/csrc/autograd/FunctionsManual.h",)


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class PatchTarget:
    """Functions compiled against libtorch's own classes, to replace its
    definitions in a running torch (`patch-torch`, docs/patching-torch.md):
    the classes stay libtorch's (its installed `generated/Functions.h`), so
    only their out-of-line members are generated, in libtorch's namespace.

    `reference`: torch's own (native_functions.yaml, derivatives.yaml,
    tags.yaml), against which an edit is found; `unusable_helpers`:
    (name, why) of each name a formula could call that libtorch defines
    with no symbol a patch can reach (stripped, clones only, inlined only:
    torch_patch/libtorch_locals.py), empty when FunctionsManual.cpp is
    compiled into the patch;
    `every`: every Function that can be patched, not only the edited ones;
    `bound_locally`: classes whose members libtorch binds to itself, which
    no other library can replace (read off the library by the tool);
    `kernels`: every ATen op whose Autograd kernel the generator can write
    gets the patch's own, registered over libtorch's (engine/patch_kernels.py);
    `complex_ops`: the ops torch differentiates for complex outputs (torch's
    build's list: its kernels refuse the others' complex outputs);
    `only`: with `every`, the unedited Functions patched are these alone
    (empty: all), and with `kernels` only the ops creating a named
    Function get the patch's kernel: a smaller build, e.g. of the Functions
    a program's graphs reach.
    """
    functions_h: str
    reference: tuple[str, str, Optional[str]]
    unusable_helpers: tuple[tuple[str, str], ...] = ()
    every: bool = False
    bound_locally: tuple[str, ...] = ()
    kernels: bool = False
    complex_ops: tuple[str, ...] = ()
    only: tuple[str, ...] = ()


def parse_python(value) -> bool:
    """`python=` as a user gives it (a bool, or 1/0, true/false, yes/no, on/off
    from a command line).  Raises OptionError with the reason."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise OptionError(f"python must be a boolean (True/False, 1/0), not {value!r}")


@dataclass(frozen=True)
class EmitOptions:
    # Our classes must not live in libtorch's `torch::autograd::generated`,
    # whose classes an extension would otherwise redefine.  None: derived
    # from the specs' op namespace (with_default_namespace), because two
    # libraries whose classes share a qualified name share one C++ type to
    # every registry keyed by it (compiled autograd's cache, Python's type
    # map), which mixes their backward up.
    namespace: Optional[str] = None
    # Extra headers for the formulas' helpers, included (in this order) by
    # every definition TU through the shared definitions prelude.
    includes: tuple[str, ...] = ()
    # Also generate, for every native function outside `aten`, its schema
    # registration and Autograd kernel (emit/op_kernels/kernels.py): what an extension
    # declaring its own ops needs.  ATen's are libtorch's own.
    kernels: bool = True
    # Also generate the Functions' Python bindings (emit/python_bindings/binding_units.py):
    # typed grad_fn, `_saved_*` properties.  Off for a library used from C++
    # alone, which then needs neither libtorch_python nor Python's symbols.
    python: bool = True
    # Definitions of libtorch's own classes (PatchTarget), not classes of our own.
    patch: Optional[PatchTarget] = None

    @property
    def ns(self) -> str:
        """The C++ namespace the classes are rendered in (unresolved options,
        as tests render single units with, give the ATen specs' one)."""
        return self.namespace or ATEN_SPECS_NAMESPACE

    def __post_init__(self) -> None:
        # Fail here, not in the C++ compiler.
        if self.namespace is not None and not _NAMESPACE_RE.fullmatch(self.namespace):
            raise OptionError(f"namespace {self.namespace!r} is not a C++ namespace name like 'a::b'")
        if self.patch is not None:
            # A patch defines members of libtorch's classes (Python bindings
            # only for its own classes), and no extension op's kernel.
            if self.namespace != LIBTORCH_NAMESPACE or self.kernels:
                raise OptionError(f"a patch of libtorch's Functions is generated in '{LIBTORCH_NAMESPACE}', "
                                  "without kernels or Python bindings of extension ops")
        elif self.namespace == LIBTORCH_NAMESPACE:
            raise OptionError(f"namespace '{LIBTORCH_NAMESPACE}' is libtorch's own: its classes "
                             f"would be defined twice; choose another")
        if not isinstance(self.python, bool):
            raise OptionError(f"python must be True or False, not {self.python!r}")
        for h in self.includes:
            if not h or any(c in h for c in "\n\r") or h.strip() != h:
                raise OptionError(f"include {h!r} is not a header path")


def default_namespace(op_namespaces: Iterable[tuple[str, str, Optional[int], str]]) -> str:
    """The classes' namespace when none is given: `<ns>::autograd` for the
    one op namespace other than `aten` of (namespace, file, line, entry)
    records in file order; the ATen specs' own without one.  The dispatcher
    lets one library at most define an op, so this is unique to the library
    as long as its ops are in one namespace: with several, refused (a
    located SpecError) rather than picking one."""
    first = None
    for ns, file, line, entry in op_namespaces:
        if ns == "aten":
            continue
        if first is None:
            first = (ns, line)
        elif ns != first[0]:
            raise SpecError(f"ops in two namespaces ('{first[0]}' at line {first[1]}, '{ns}' here): "
                            f"the default namespace of the classes, '<op namespace>::autograd', needs "
                            f"one; give namespace= (the C++ namespace of the classes, unique to this "
                            f"library)", file, line, entry)
    return f"{first[0]}::autograd" if first else ATEN_SPECS_NAMESPACE


def with_default_namespace(opts: EmitOptions, op_namespaces) -> EmitOptions:
    """`opts` with its namespace resolved (default_namespace) if not given."""
    if opts.namespace is not None:
        return opts
    return replace(opts, namespace=default_namespace(op_namespaces))
