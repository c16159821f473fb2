"""The two shared headers every generated Function builds on
(templates/prelude.h and templates/prelude_impl.h).

`prelude.h` is what a declaration needs (the Node API); per-op headers
include it, so users including one Function pay only for that.
`prelude_impl.h` is what a definition needs: ATen, compiled autograd, the
caller's helper headers, and small helpers the backward code calls.  It
depends only on the options, so editing one op never changes what another
op's TU preprocesses to.
"""

from __future__ import annotations

from ...templates import load
from ...tree import BANNER, PRELUDE_H, PRELUDE_IMPL_H
from ..options import EmitOptions
from .support import step_declarations

# libtorch's own copies of the formula built-ins (templates/formula_builtins.h) live here.
_MANUAL = "torch/csrc/autograd/FunctionsManual.h"


def include_line(header: str) -> str:
    """`<x.h>` and `"x.h"` are kept as given; a bare path gets quotes, which
    also searches next to the including file."""
    if header.startswith(("<", '"')):
        return f"#include {header}"
    return f'#include "{header}"'


def _has_manual(includes: tuple[str, ...]) -> bool:
    return any(h.strip('<>"') == _MANUAL for h in includes)


def _prelude_impl_h(ns: str, includes: tuple[str, ...], patch: bool) -> str:
    helpers = ["// Helpers the formulas call (--include).", *map(include_line, includes), ""] if includes else []
    # The built-ins derivatives.yaml documents for formulas, for specs that do
    # not include FunctionsManual.h (an extension's): declared in the
    # Functions' namespace, so that unqualified calls in a formula find them first.
    builtins = [] if _has_manual(includes) else load("formula_builtins.h").text
    # A patch's bodies are in libtorch's namespace, beside the copies of
    # these that generated/Functions.h and FunctionsManual.h declare there:
    # two of each would make every call ambiguous, so it calls libtorch's.
    own_helpers = [] if patch else load("prelude_helpers.h").text
    return load("prelude_impl.h").substitute(
        banner=BANNER, ns=ns, prelude_h=PRELUDE_H, helper_includes=helpers, formula_builtins=builtins,
        own_helpers=own_helpers, step_declarations=step_declarations())


def render_preludes(opts: EmitOptions) -> dict[str, str]:
    return {PRELUDE_H: load("prelude.h").substitute(banner=BANNER, ns=opts.ns),
            PRELUDE_IMPL_H: _prelude_impl_h(opts.ns, opts.includes, opts.patch is not None)}
