"""Python bindings of the generated Functions: the binding units.

What torchgen's `python_functions_*.cpp` do for ATen's Functions, for ours:
each Function gets a Python type (a `THPCppFunction` with the default Node
properties and its `_saved_*` / `_raw_saved_*` ones, python_properties.py),
registered with `registerCppFunction` so that `tensor.grad_fn` has it, and
added to `torch._C._functions` so that `isinstance(grad_fn,
torch.autograd.graph.Node)` holds.  Registration runs when the library is
loaded (a static initialiser; nothing when no Python interpreter runs).

Why binding units of their own (`python/bindings_<k>.cpp`), not the
Functions' TUs or the buckets: torch's Python and pybind11 headers cost
about 0.7 header parses on top of `prelude_impl.h` in every TU that
includes them.  In the Functions' TUs every formula edit would pay them; in
a shard, a Function's bindings depend only on its name and what it saves,
so a formula edit that changes nothing saved leaves its shard's bytes, hence
its object, as they were, and one that changes what it saves recompiles
that one shard (which includes its header).  A Function's shard is a hash of
its name, so adding or removing one rewrites one shard.

Names: `__name__` is the Function's name when `torch._C._functions` has no
attribute of that name; when another type holds it (ATen's `MulBackward0`,
or another library's class of the same name in another namespace), the type
takes the qualified name `<namespace with _>_<Function>` instead, never
shadowing the holder.  If that is held too (two libraries defining the same
fully qualified class), the load fails with one ImportError naming both.
"""

from __future__ import annotations

import math
from typing import Sequence

import xxhash

from ..api.autograd import DifferentiabilityInfo
from .options import EmitOptions
from .prelude import GENERATED
from .python_properties import properties
from .saved import saved_slots

FOLDER = "python"
HEADER = f"{FOLDER}/bindings.h"
# Functions per shard at most: a shard pays the Python headers once (~1.5
# header parses with its Functions' headers), and a bigger shard makes a
# saved-value edit recompile more getters (each costs microseconds).
MAX_PER_SHARD = 256


def shard_count(n_functions: int) -> int:
    return max(1, math.ceil(n_functions / MAX_PER_SHARD))


def shard_of(name: str, n: int) -> int:
    return xxhash.xxh64_intdigest(name.encode(), seed=2) % n


def shard_file(k: int) -> str:
    return f"{FOLDER}/bindings_{k}.cpp"


def sources(n_functions: int) -> list[str]:
    """The binding TUs for `n_functions` bound Functions (none: none)."""
    return [shard_file(k) for k in range(shard_count(n_functions))] if n_functions else []


def qualified_name(namespace: str, op: str) -> str:
    """The Python name taken when `op`'s own is held by another type."""
    return namespace.replace("::", "_") + "_" + op


def _cpp_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _function(info: DifferentiabilityInfo, ns: str) -> tuple[list[str], str]:
    """(getters and property table, registration call) of one Function."""
    op = info.op
    props = properties(op, saved_slots(info.all_saved_inputs, info.all_saved_outputs))
    out = []
    for p in props:
        out += [f"PyObject* {p.getter}(THPCppFunction* self, void*) {{",
                "  HANDLE_TH_ERRORS",
                f"  const auto& node = *static_cast<{op}*>(self->cdata.get());",
                *("  " + line for line in p.body),
                "  END_HANDLE_TH_ERRORS",
                "}", ""]
    out += [f"PyGetSetDef {op}_properties[] = {{", "    THP_FUNCTION_DEFAULT_PROPERTIES,",
            *(f'    {{(char*)"{p.name}", (getter){p.getter}, nullptr, nullptr, nullptr}},' for p in props),
            "    {nullptr}};", f"PyTypeObject {op}_type;", ""]
    call = (f"ok = ok && add_class<{op}>(module, {op}_type, {_cpp_string(op)}, "
            f"{_cpp_string(qualified_name(ns, op))}, {_cpp_string(ns + '::' + op)}, {op}_properties);")
    return out, call


def render_shard(k: int, infos: Sequence[DifferentiabilityInfo], opts: EmitOptions) -> str:
    ns = opts.namespace
    infos = sorted(infos, key=lambda i: i.op)
    body, calls = [], []
    for info in infos:
        lines, call = _function(info, ns)
        body += lines
        calls.append(call)
    return "\n".join(
        [GENERATED, f"// Python bindings of {len(infos)} autograd Functions (shard {k}).", "",
         '#include "bindings.h"', *(f'#include "../functions/{i.op}.h"' for i in infos), "",
         f"namespace {ns} {{", "namespace {", "", *body,
         "bool add_all(PyObject* module) {", "  bool ok = true;", *("  " + c for c in calls),
         "  return ok;", "}", "",
         "// At load: torch.ops.load_library, or a Python module linking this library.",
         "const bool registered = at_load(add_all);", "",
         "}  // namespace", f"}}  // namespace {ns}", ""])


def render_header(opts: EmitOptions) -> str:
    return _HEADER.format(generated=GENERATED, ns=opts.namespace)


def render_bindings(infos: Sequence[DifferentiabilityInfo], opts: EmitOptions) -> dict[str, str]:
    """`python/bindings.h` and every shard, for the Functions `infos`."""
    if not infos:
        return {}
    n = shard_count(len(infos))
    shards: dict[int, list] = {k: [] for k in range(n)}
    for i in infos:
        shards[shard_of(i.op, n)].append(i)
    files = {HEADER: render_header(opts)}
    files.update((shard_file(k), render_shard(k, members, opts)) for k, members in shards.items())
    return files


# Helpers of internal linkage (static): libraries loaded RTLD_GLOBAL, as
# torch.ops.load_library does, would otherwise share one copy of each.
_HEADER = """{generated}
// What the Python bindings of the Functions need (see codegen/emit/python_bindings.py).
#pragma once

#include <torch/csrc/python_headers.h>

#include "../prelude.h"

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/object_ptr.h>
#include <torch/csrc/utils/pybind.h>

#include <exception>
#include <string_view>
#include <typeinfo>

namespace {ns} {{
namespace {{

// THP_FUNCTION_DEFAULT_PROPERTIES names torch::autograd's getters unqualified.
using namespace torch::autograd;

PyObject* backward_twice() {{
  PyErr_SetString(PyExc_RuntimeError, torch::autograd::ERR_BACKWARD_TWICE);
  return nullptr;
}}

PyObject* py_int(int64_t v) {{ return PyLong_FromLongLong(v); }}
PyObject* py_float(double v) {{ return PyFloat_FromDouble(v); }}
PyObject* py_bool(bool v) {{ return PyBool_FromLong(v); }}
PyObject* py_str(std::string_view v) {{
  return PyUnicode_FromStringAndSize(v.data(), static_cast<Py_ssize_t>(v.size()));
}}
PyObject* py_symint(const c10::SymInt& v) {{
  if (auto m = v.maybe_as_int()) return PyLong_FromLongLong(*m);
  return pybind11::cast(v).release().ptr();
}}
PyObject* py_scalar(const at::Scalar& v) {{
  if (v.isComplex()) {{
    auto c = v.to<c10::complex<double>>();
    return PyComplex_FromDoubles(c.real(), c.imag());
  }}
  if (v.isFloatingPoint()) return PyFloat_FromDouble(v.to<double>());
  if (v.isIntegral(/*includeBool=*/false)) return PyLong_FromLongLong(v.to<int64_t>());
  if (v.isBoolean()) return PyBool_FromLong(v.to<bool>());
  PyErr_SetString(PyExc_RuntimeError, "Unknown scalar type");
  return nullptr;
}}
// The SavedTensor object torch's own bindings give (register_hooks, ...).
PyObject* saved_tensor(const SavedVariable& v) {{
  return pybind11::cast(v, pybind11::return_value_policy::reference).release().ptr();
}}

template <class Seq, class F>
PyObject* tuple_of(const Seq& xs, F&& to_py) {{
  THPObjectPtr tuple(PyTuple_New(static_cast<Py_ssize_t>(xs.size())));
  if (!tuple) return nullptr;
  Py_ssize_t i = 0;
  for (const auto& x : xs) {{
    PyObject* item = to_py(x);
    if (!item) return nullptr;
    PyTuple_SET_ITEM(tuple.get(), i++, item);
  }}
  return tuple.release();
}}

// The name `type` takes in torch._C._functions: its own when free, else the
// qualified one; nullptr, with an ImportError set, when both are held.
const char* free_name(PyObject* module, const char* name, const char* qualified, const char* cpp_name) {{
  THPObjectPtr held(PyObject_GetAttrString(module, name));
  if (!held) {{
    PyErr_Clear();
    return name;
  }}
  THPObjectPtr also(PyObject_GetAttrString(module, qualified));
  if (!also) {{
    PyErr_Clear();
    return qualified;
  }}
  PyErr_Format(PyExc_ImportError,
               "cannot register the Python type of autograd Function %s: torch._C._functions.%s is "
               "already %R and torch._C._functions.%s is already %R (two loaded libraries define "
               "the same class; give one another namespace)",
               cpp_name, name, held.get(), qualified, also.get());
  return nullptr;
}}

template <class C>
bool add_class(PyObject* module, PyTypeObject& type, const char* name, const char* qualified,
               const char* cpp_name, PyGetSetDef* props) {{
  const char* use = free_name(module, name, qualified, cpp_name);
  if (!use) return false;
  torch::autograd::_initFunctionPyTypeObject(type, use, props, nullptr);
  Py_INCREF(&type);
  if (PyModule_AddObject(module, use, reinterpret_cast<PyObject*>(&type)) < 0) {{
    Py_DECREF(&type);
    return false;
  }}
  torch::autograd::registerCppFunction(typeid(C), &type);
  return true;
}}

// Runs `add_all(torch._C._functions)` with the GIL.  A failure leaves its
// Python error set, which ctypes (torch.ops.load_library) raises from the
// load.  In a program without a Python interpreter it does nothing.
bool at_load(bool (*add_all)(PyObject*)) {{
  if (!Py_IsInitialized()) return false;
  PyGILState_STATE gil = PyGILState_Ensure();
  bool ok = false;
  if (!PyErr_Occurred()) {{  // another shard's error comes first
    try {{
      THPObjectPtr c(PyImport_ImportModule("torch._C"));
      THPObjectPtr module(c ? PyObject_GetAttrString(c.get(), "_functions") : nullptr);
      ok = module && add_all(module.get());
    }} catch (python_error& e) {{
      e.restore();
    }} catch (const std::exception& e) {{
      PyErr_SetString(PyExc_ImportError, e.what());
    }}
  }}
  PyGILState_Release(gil);
  return ok;
}}

}}  // namespace
}}  // namespace {ns}
"""
