${banner}
// What a patch of libtorch's own Functions checks as it loads
// (codegen/emit/functions/load_check.py): each Function's file records its class,
// and a patch whose definitions libtorch does not call says so.
#pragma once

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <typeinfo>
#include <vector>

#pragma GCC visibility push(hidden)
namespace autograd_functions_load {

// Records `cls` (a class of libtorch's, qualified) as patched, and whether libtorch's
// own vtable of it calls this library's apply; a static initialiser of
// each Function's file calls it.  Defined in support.cpp.
bool claim(const std::type_info& type, const char* cls);

// Records `op` (`aten::sin`) as an op whose Autograd kernel this library
// registered over libtorch's; the registration calls it.  Defined in support.cpp.
bool claim_kernel(const char* op);

// Loads the Python types of the patch's own classes, once, where torch's
// Python module runs; an own class's kernel calls it.  Defined in support.cpp.
void bind_python();

// The classes are libtorch's own, claimed by no other library: nothing is
// refused, so every entry point runs.
inline void check_loaded() {}

}  // namespace autograd_functions_load
#pragma GCC visibility pop
