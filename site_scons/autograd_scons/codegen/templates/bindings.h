${banner}
// What the Python bindings of the Functions need (see codegen/emit/python_bindings.py).
#pragma once

#include <torch/csrc/python_headers.h>

#include "${prelude_h}"

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/object_ptr.h>
#include <torch/csrc/utils/pybind.h>

#include <exception>
#include <string_view>
#include <typeinfo>

// Helpers of internal linkage (the unnamed namespace): libraries loaded
// RTLD_GLOBAL would otherwise share one copy of each, whichever was loaded
// first.  `inline`, so that a shard not using one is not warned about it.
namespace ${ns} {
namespace {

// THP_FUNCTION_DEFAULT_PROPERTIES names torch::autograd's getters unqualified.
using namespace torch::autograd;

// The one C getter of every _saved_/_raw_saved_ property: the property's
// own getter comes as the closure.  One HANDLE_TH_ERRORS (torch's exception
// mapping) per TU, not per getter: it is costly to compile.
using Getter = PyObject* (*)(THPCppFunction*);

inline void* as_closure(Getter g) {
  return reinterpret_cast<void*>(g);
}

inline PyObject* guarded_getter(PyObject* self, void* closure) {
  HANDLE_TH_ERRORS
  return reinterpret_cast<Getter>(closure)(reinterpret_cast<THPCppFunction*>(self));
  END_HANDLE_TH_ERRORS
}

inline PyObject* backward_twice() {
  PyErr_SetString(PyExc_RuntimeError, torch::autograd::ERR_BACKWARD_TWICE);
  return nullptr;
}

inline PyObject* py_int(int64_t v) { return PyLong_FromLongLong(v); }
inline PyObject* py_float(double v) { return PyFloat_FromDouble(v); }
inline PyObject* py_bool(bool v) { return PyBool_FromLong(v); }
inline PyObject* py_str(std::string_view v) {
  return PyUnicode_FromStringAndSize(v.data(), static_cast<Py_ssize_t>(v.size()));
}
inline PyObject* py_symint(const c10::SymInt& v) {
  if (auto m = v.maybe_as_int()) return PyLong_FromLongLong(*m);
  return pybind11::cast(v).release().ptr();
}
inline PyObject* py_scalar(const at::Scalar& v) {
  if (v.isComplex()) {
    auto c = v.to<c10::complex<double>>();
    return PyComplex_FromDoubles(c.real(), c.imag());
  }
  if (v.isFloatingPoint()) return PyFloat_FromDouble(v.to<double>());
  if (v.isIntegral(/*includeBool=*/false)) return PyLong_FromLongLong(v.to<int64_t>());
  if (v.isBoolean()) return PyBool_FromLong(v.to<bool>());
  PyErr_SetString(PyExc_RuntimeError, "Unknown scalar type");
  return nullptr;
}
// The SavedTensor object torch's own bindings give (register_hooks, ...).
inline PyObject* saved_tensor(const SavedVariable& v) {
  return pybind11::cast(v, pybind11::return_value_policy::reference).release().ptr();
}

template <class Seq, class F>
inline PyObject* tuple_of(const Seq& xs, F&& to_py) {
  THPObjectPtr tuple(PyTuple_New(static_cast<Py_ssize_t>(xs.size())));
  if (!tuple) return nullptr;
  Py_ssize_t i = 0;
  for (const auto& x : xs) {
    PyObject* item = to_py(x);
    if (!item) return nullptr;
    PyTuple_SET_ITEM(tuple.get(), i++, item);
  }
  return tuple.release();
}

// The name `type` takes in torch._C._functions: its own when free, else the
// qualified one; nullptr, with an ImportError set, when both are held.
inline const char* free_name(PyObject* module, const char* name, const char* qualified, const char* cpp_name) {
  THPObjectPtr held(PyObject_GetAttrString(module, name));
  if (!held) {
    PyErr_Clear();
    return name;
  }
  THPObjectPtr also(PyObject_GetAttrString(module, qualified));
  if (!also) {
    PyErr_Clear();
    return qualified;
  }
  PyErr_Format(PyExc_ImportError,
               "cannot register the Python type of autograd Function %s: torch._C._functions.%s is "
               "already %R and torch._C._functions.%s is already %R",
               cpp_name, name, held.get(), qualified, also.get());
  return nullptr;
}

// The classes registered by every library this tool generated, by C++ name:
// a dict in torch._C._functions.  The type map registerCppFunction fills is
// keyed by type_info, which two libraries defining the same fully qualified
// class share, so the second must not register (its getters could read the
// first's objects with another layout).
inline PyObject* registry(PyObject* module) {
  static const char* const name = "_autograd_functions_scons_classes";
  PyObject* classes = PyObject_GetAttrString(module, name);
  if (!classes) {
    PyErr_Clear();
    classes = PyDict_New();
    if (classes && PyObject_SetAttrString(module, name, classes) < 0) Py_CLEAR(classes);
  } else if (!PyDict_Check(classes)) {
    PyErr_Format(PyExc_ImportError, "torch._C._functions.%s is not a dict", name);
    Py_CLEAR(classes);
  }
  return classes;
}

template <class C>
inline bool add_class(PyObject* module, PyTypeObject& type, const char* name, const char* qualified,
               const char* cpp_name, PyGetSetDef* props) {
  THPObjectPtr classes(registry(module));
  if (!classes) return false;
  if (PyObject* prev = PyDict_GetItemString(classes.get(), cpp_name)) {
    PyErr_Format(PyExc_ImportError,
                 "cannot register the Python type of autograd Function %s: another loaded library "
                 "defines the same class (its type: %R); give one of them another namespace",
                 cpp_name, prev);
    return false;
  }
  const char* use = free_name(module, name, qualified, cpp_name);
  if (!use) return false;
  torch::autograd::_initFunctionPyTypeObject(type, use, props, nullptr);
  PyObject* as_object = reinterpret_cast<PyObject*>(&type);
  if (PyDict_SetItemString(classes.get(), cpp_name, as_object) < 0) return false;
  Py_INCREF(as_object);
  if (PyModule_AddObject(module, use, as_object) < 0) {
    Py_DECREF(as_object);
    return false;
  }
  registerCppFunction(typeid(C), &type);
  return true;
}

// Runs `add_all(torch._C._functions)` with the GIL.  A failure leaves its
// Python error set, which ctypes (torch.ops.load_library) raises from the
// load.  In a program without a Python interpreter it does nothing.
inline bool at_load(bool (*add_all)(PyObject*)) {
  if (!Py_IsInitialized()) return false;
  PyGILState_STATE gil = PyGILState_Ensure();
  bool ok = false;
  if (!PyErr_Occurred()) {  // another shard's error comes first
    try {
      THPObjectPtr c(PyImport_ImportModule("torch._C"));
      THPObjectPtr module(c ? PyObject_GetAttrString(c.get(), "_functions") : nullptr);
      ok = module && add_all(module.get());
    } catch (python_error& e) {
      e.restore();
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_ImportError, e.what());
    }
  }
  PyGILState_Release(gil);
  return ok;
}

}  // namespace
}  // namespace ${ns}
