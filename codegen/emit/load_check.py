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

Both copies of an overridden unit (codegen/layout.py) claim from the same
library: not a clash.  Everything here is hidden, one copy per library.
"""

from __future__ import annotations

from ..tree import BANNER, LOAD_CHECK_H

# Marker operators' namespace in the dispatcher (one per claimed class).
MARKER_NAMESPACE = "autograd_functions_classes"

_TEXT = f"""{BANNER}
// Refuses to load a library next to another one defining an autograd
// Function of the same qualified name (codegen/emit/load_check.py).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <dlfcn.h>

#include <cstdio>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#pragma GCC visibility push(hidden)
namespace autograd_functions_load {{

// Defined once per library, in support.cpp (emit/support.py): every
// Function's file calls them, and compiling their bodies (the dispatcher
// registration, above all) in each TU cost ~0.2 s per edit TU.

// Non-empty once this library was refused: why.
std::string& refusal();

// Claims `cls` (its qualified name) for this library; a static initialiser
// of each Function's file calls it.
bool claim(const std::type_info& type, const char* cls);

// First in every entry point of a Function: a refused library computes nothing.
inline void check_loaded() {{
  TORCH_CHECK(refusal().empty(), refusal());
}}

}}  // namespace autograd_functions_load
#pragma GCC visibility pop
"""


# The definitions of what the header declares (support.cpp, emit/support.py).
DEFINITIONS = f"""#pragma GCC visibility push(hidden)
namespace autograd_functions_load {{

// Non-empty once this library was refused: why.
std::string& refusal() {{
  static std::string why;
  return why;
}}

static std::string this_library() {{
  static const int anchor = 0;
  Dl_info info;
  if (dladdr(&anchor, &info) && info.dli_fname && *info.dli_fname) {{
    return info.dli_fname;
  }}
  return "<a library>";
}}

// ImportError in the Python thread loading us (CPython raises it when
// dlopen returns), or one line on stderr when no Python is running.
static void report(const std::string& message) {{
  using IsInitialized = int (*)();
  using Ensure = int (*)();
  using Release = void (*)(int);
  using SetString = void (*)(void*, const char*);
  auto initialized = reinterpret_cast<IsInitialized>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  auto ensure = reinterpret_cast<Ensure>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
  auto release = reinterpret_cast<Release>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
  auto set = reinterpret_cast<SetString>(dlsym(RTLD_DEFAULT, "PyErr_SetString"));
  auto type = reinterpret_cast<void**>(dlsym(RTLD_DEFAULT, "PyExc_ImportError"));
  if (initialized && ensure && release && set && type && initialized()) {{
    int state = ensure();
    set(*type, message.c_str());
    release(state);
  }} else {{
    std::fprintf(stderr, "%s\\n", message.c_str());
  }}
}}

bool claim(const std::type_info& type, const char* cls) {{
  static std::vector<c10::RegistrationHandleRAII> markers;
  const std::string me = this_library();
  const std::string name = std::string("{MARKER_NAMESPACE}::") + type.name();
  auto& dispatcher = c10::Dispatcher::singleton();
  if (auto other = dispatcher.findSchema({{name, ""}})) {{
    if (other->debug() != me && refusal().empty()) {{
      refusal() = "autograd_functions: refusing to load " + me + ": its autograd Function " + cls +
          " is already defined by " + other->debug() + ", loaded before it; two libraries must not " +
          "define classes of one qualified name (compiled autograd and Python would take one's " +
          "backward for the other's): give each its own namespace= (the default, " +
          "'<op namespace>::autograd', is unique to its ops)";
      report(refusal());
    }}
    return false;
  }}
  markers.push_back(dispatcher.registerDef(c10::FunctionSchema(name, "", {{}}, {{}}), me, {{}}));
  return true;
}}

}}  // namespace autograd_functions_load
#pragma GCC visibility pop
"""


def render_load_check() -> dict[str, str]:
    return {LOAD_CHECK_H: _TEXT}


def claim_lines(op: str, ns: str) -> list[str]:
    """The static initialiser of `op`'s file that claims its class."""
    return ["// Refuses this library if another one loaded defines this class (load_check.h).",
            f"static const bool {op}_claimed =",
            f'    ::autograd_functions_load::claim(typeid({op}), "{ns}::{op}");', ""]


CHECK_LINE = "::autograd_functions_load::check_loaded();"
