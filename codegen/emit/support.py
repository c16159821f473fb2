"""`support.cpp`: the out-of-line definitions every generated TU calls.

The load-time class claim (load_check.h) and compiled autograd's call into
the traced graph are the same code in every Function's file.  Defined
inline in the shared headers, each TU compiled its own copy: ~0.5 s of a
formula edit's ~3.5 s TU against the precompiled prelude.  They are
defined here instead, once per library: the first unity bucket includes
this file (unity_files.py), and with unity=0 it is a TU of its own.  Its
text depends on the options only, like the preludes'.
"""

from __future__ import annotations

from .load_check import DEFINITIONS, HEADER as LOAD_CHECK
from .options import EmitOptions
from .prelude import GENERATED, apply_functional_definition

SOURCE = "support.cpp"


def render_support(opts: EmitOptions) -> dict[str, str]:
    return {SOURCE: "\n".join([
        GENERATED,
        "// Out-of-line definitions every generated TU calls, compiled once per",
        "// library (codegen/emit/support.py).",
        "",
        '#include "prelude_impl.h"',
        f'#include "{LOAD_CHECK}"',
        "",
        DEFINITIONS,
        apply_functional_definition(opts.ns)])}
