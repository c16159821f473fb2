"""`load_check.h`: a library refuses to load next to another library's
class of the same qualified name.

Two libraries (loaded RTLD_LOCAL) each call their own copy of a class, but
GCC compares `type_info` by name, so to anything keyed by the C++ type
(compiled autograd's per-Node cache, the Python type map) two classes of
one qualified name are one type: the second library's backward would be
the first's.  Every generated Function claims its name at load, from a
static initialiser in its own file (so the claims stay per unit): a marker
operator per class in the c10 dispatcher, the one registry every library
shares, whose debug string is the claiming library's path.  A name claimed
by another library refuses this one:

- the load raises, when Python is loading it: `ImportError` set from the
  initialiser (found by `dlsym`, so nothing links libpython), which CPython
  reports when `dlopen` returns (`torch.ops.load_library` raises
  `OSError: Could not load this library`, caused by it); otherwise the
  message is written to stderr, once;
- every generated Function of the refused library throws that message
  from `apply` and `compiled_args`, so whatever of it still runs (its op
  registrations, the caller's own code) never yields a wrong gradient.

Both copies of an overridden unit (codegen/engine/buckets.py) claim from the same
library: not a clash.  Everything here is hidden, one copy per library.

A patch of libtorch's own Functions (EmitOptions.patch) defines members of
libtorch's classes, which no other library claims: its files claim through
the same calls, which there record each class as patched and check that
libtorch's own vtable calls the patch's definition (templates/patch_check.h
and .cpp), so that a patch loaded too late to take effect says so.
"""

from __future__ import annotations

from ...templates import load
from ...tree import BANNER, LOAD_CHECK_H
from ..options import EmitOptions

# Marker operators' namespace in the dispatcher (one per claimed class).
MARKER_NAMESPACE = "autograd_functions_classes"


def render_load_check(opts: EmitOptions = EmitOptions()) -> dict[str, str]:
    """The header (templates/load_check.h, or patch_check.h for a patch);
    what it declares is defined in support.cpp (load_check_definitions),
    and each Function's file claims its class (templates/function.cpp)."""
    header = "patch_check.h" if opts.patch else "load_check.h"
    return {LOAD_CHECK_H: load(header).substitute(banner=BANNER)}


def load_check_definitions(opts: EmitOptions) -> list[str]:
    """support.cpp's definitions of what the header declares."""
    if opts.patch:
        from ...model.aten_op import OWN_NAMESPACE
        return load("patch_check.cpp").lines(own_namespace=OWN_NAMESPACE)
    return load("load_check.cpp").lines(marker_namespace=MARKER_NAMESPACE)
