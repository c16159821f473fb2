"""The two shared headers every generated Function builds on.

`prelude.h` is what a declaration needs (the Node API); per-op headers
include it, so users including one Function pay only for that.
`prelude_impl.h` is what a definition needs: ATen, compiled autograd, the
caller's helper headers, and small helpers the backward code calls.  It
depends only on the options, so editing one op never changes what another
op's TU preprocesses to.
"""

from __future__ import annotations

from ..tree import BANNER, PRELUDE_H, PRELUDE_IMPL_H
from .options import EmitOptions
from .support import declarations


def include_line(header: str) -> str:
    """`<x.h>` and `"x.h"` are kept as given; a bare path gets quotes, which
    also searches next to the including file."""
    if header.startswith(("<", '"')):
        return f"#include {header}"
    return f'#include "{header}"'


def _prelude_h(ns: str) -> str:
    return f"""{BANNER}
// What every generated autograd Function declaration needs.
#pragma once

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/saved_variable.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace {ns} {{

using torch::autograd::CompiledNodeArgs;
using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::SwapSavedVariables;
using torch::autograd::TraceableFunction;
using torch::autograd::variable_list;

}}  // namespace {ns}
"""


# libtorch's own copies of the formula built-ins (below) live here.
_MANUAL = "torch/csrc/autograd/FunctionsManual.h"

# The built-ins derivatives.yaml documents for formulas, for specs that do not
# include FunctionsManual.h (an extension's): declared in the Functions'
# namespace, so that unqualified calls in a formula find them first.
_BUILTINS = """
// Formula built-ins (derivatives.yaml): `not_implemented("name")` as an
// input's formula makes backward through it raise; `wrap_opt_if(t, cond)`.
inline at::Tensor not_implemented(const char* name, const char* reason = "") {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "the derivative for '", name, "' is not implemented",
                              (reason && *reason) ? ": " : ".", reason);
  return at::Tensor();
}

inline std::vector<at::Tensor> not_implemented_list(const char* name, const char* reason = "") {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "the derivative for '", name, "' is not implemented",
                              (reason && *reason) ? ": " : ".", reason);
  return {};
}

inline std::optional<at::Tensor> wrap_opt_if(const at::Tensor& t, bool cond) {
  return cond ? std::optional<at::Tensor>(t) : std::nullopt;
}
"""


def _has_manual(includes: tuple[str, ...]) -> bool:
    return any(h.strip('<>"') == _MANUAL for h in includes)


def _prelude_impl_h(ns: str, includes: tuple[str, ...]) -> str:
    extra = "\n".join(include_line(h) for h in includes)
    if extra:
        extra = "\n// Helpers the formulas call (--include).\n" + extra + "\n"
    builtins = "" if _has_manual(includes) else _BUILTINS
    return f"""{BANNER}
// What every generated autograd Function definition needs.
#pragma once

#include "{PRELUDE_H}"

#include <ATen/ATen.h>
#include <ATen/core/List.h>
#include <ATen/core/functional.h>
#include <c10/util/irange.h>
#include <torch/csrc/dynamo/compiled_autograd.h>

#include <algorithm>
#include <array>
#include <tuple>
{extra}
// Formulas written for libtorch call its backward helpers unqualified; the
// empty namespace makes the directive valid without FunctionsManual.h.
namespace torch::autograd::generated::details {{}}
using namespace torch::autograd::generated::details;

namespace {ns} {{

using namespace torch::autograd;
using at::ArrayRef;
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;
using at::TensorGeometry;
using at::TensorList;
using c10::fmap;
using std::optional;
using torch::autograd::IndexRange;
using torch::autograd::TypeAndSize;
{builtins}
// Hands out consecutive gradient slots: one per tensor input, n per list.
class SlotRanges {{
 public:
  IndexRange range(size_t n) {{
    next_ += n;
    return {{next_ - n, next_}};
  }}
  size_t size() const {{
    return next_;
  }}

 private:
  size_t next_ = 0;
}};

inline void copy_range(variable_list& out, IndexRange r, const Tensor& t) {{
  TORCH_INTERNAL_ASSERT(r.second <= out.size() && r.second - r.first == 1,
                        "gradient slot range does not fit a single tensor");
  out[r.first] = t;
}}

inline void copy_range(variable_list& out, IndexRange r, at::ArrayRef<Tensor> ts) {{
  TORCH_INTERNAL_ASSERT(r.second <= out.size() && r.second - r.first == ts.size(),
                        "gradient slot range does not fit the tensor list");
  std::copy(ts.begin(), ts.end(), out.begin() + static_cast<std::ptrdiff_t>(r.first));
}}

inline bool any_variable_defined(const variable_list& vs) {{
  return std::any_of(vs.begin(), vs.end(), [](const Tensor& v) {{ return v.defined(); }});
}}

inline std::vector<Tensor> unpack_list(at::ArrayRef<SavedVariable> xs,
                                       const c10::intrusive_ptr<Node>& saved_for) {{
  std::vector<Tensor> out;
  out.reserve(xs.size());
  for (const SavedVariable& x : xs) {{
    out.emplace_back(x.unpack(saved_for));
  }}
  return out;
}}

// Undefined tensors come back as nullopt, as the op received them.
inline c10::List<std::optional<Tensor>> unpack_opt_list(at::ArrayRef<SavedVariable> xs) {{
  c10::List<std::optional<Tensor>> out;
  out.reserve(xs.size());
  for (const SavedVariable& x : xs) {{
    Tensor t = x.unpack();
    out.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
  }}
  return out;
}}

// Compiled autograd: run this Function's apply_functional in the traced
// graph.  Defined once per library, in support.cpp (emit/support.py).
__attribute__((visibility("hidden"))) variable_list compiled_autograd_apply_functional(
    const PackedArgs& packed_args,
    const torch::autograd::edge_list& next_edges,
    SwapSavedVariables& saved,
    const variable_list& grads,
    const std::string& name);

{declarations()}
}}  // namespace {ns}
"""


def render_preludes(opts: EmitOptions) -> dict[str, str]:
    return {PRELUDE_H: _prelude_h(opts.ns),
            PRELUDE_IMPL_H: _prelude_impl_h(opts.ns, opts.includes)}
