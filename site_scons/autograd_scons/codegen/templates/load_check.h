${banner}
// Refuses to load a library next to another one defining an autograd
// Function of the same qualified name (codegen/emit/functions/load_check.py).
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
namespace autograd_functions_load {

// Defined once per library, in support.cpp (codegen/templates/support.cpp):
// every Function's file calls them, so their bodies (the dispatcher
// registration, above all) are compiled once, not in every TU.

// Non-empty once this library was refused: why.
std::string& refusal();

// Claims `cls` (its qualified name) for this library; a static initialiser
// of each Function's file calls it.
bool claim(const std::type_info& type, const char* cls);

// An op's registration that threw: the library is refused (an ImportError
// where Python loads it), never std::terminate from its static initialiser.
void refuse_registration(const char* op, const std::exception& error);

// First in every entry point of a Function: a refused library computes nothing.
inline void check_loaded() {
  TORCH_CHECK(refusal().empty(), refusal());
}

}  // namespace autograd_functions_load
#pragma GCC visibility pop
