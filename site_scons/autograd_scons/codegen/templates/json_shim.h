${banner}
// For the vmap plumbing of the extension's ops (ops/*.cpp): the current
// vmap level is ATen/functorch/DynamicLayer.h's, whose Interpreter.h
// includes <nlohmann/json.hpp>, which torch's wheel does not ship
// (pytorch/pytorch#181565).  The output folder is on the include path, so
// this file answers that include: it forwards to a real nlohmann/json.hpp
// found after it on the path, else it declares the few names Interpreter.h
// spells in its (de)serialisation, which nothing here calls.
#pragma once

#ifdef __has_include_next
#if __has_include_next(<nlohmann/json.hpp>)
#define AUTOGRAD_EXT_NLOHMANN_JSON_FOUND
#include_next <nlohmann/json.hpp>
#endif
#endif

#ifndef AUTOGRAD_EXT_NLOHMANN_JSON_FOUND
#include <string>

namespace nlohmann {

class json {
 public:
  json();
  template <typename T>
  json(const T& value);
  static json parse(const std::string& text);
  std::string dump() const;
  template <typename T>
  T get() const;
};

}  // namespace nlohmann
#endif
