
#include <algorithm>

#pragma GCC visibility push(hidden)
namespace autograd_functions_load {

// The digest of this library's generated code (cache_key.cpp).
extern const char cache_digest[];

namespace {

// `tag` with `token` in it: its words that are no library's token first, as
// they were, then every library's token once, sorted, so that the tag
// depends on which libraries are loaded, never on their order, and adding a
// token twice changes nothing.
std::string with_token(const std::string& tag, const std::string& token) {
  static const std::string prefix = "${prefix}";
  std::vector<std::string> tokens{token};
  std::string kept;
  bool first = true;
  for (size_t start = 0;;) {
    const size_t end = tag.find(' ', start);
    const std::string word = tag.substr(start, end == std::string::npos ? end : end - start);
    if (word.compare(0, prefix.size(), prefix) == 0) {
      tokens.push_back(word);
    } else {
      kept += (first ? "" : " ") + word;
      first = false;
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  for (const std::string& t : tokens) {
    kept += (kept.empty() ? "" : " ") + t;
  }
  return kept;
}

// Python's C API, looked up in the running process (nothing links
// libpython): `running` is null or false in a program without Python.
struct Python {
  template <class F>
  static F find(const char* name) {
    return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  }
  using Object = void*;
  int (*running)() = find<int (*)()>("Py_IsInitialized");
  int (*ensure)() = find<int (*)()>("PyGILState_Ensure");
  void (*release)(int) = find<void (*)(int)>("PyGILState_Release");
  Object (*error)() = find<Object (*)()>("PyErr_Occurred");
  void (*clear)() = find<void (*)()>("PyErr_Clear");
  Object (*modules)() = find<Object (*)()>("PyImport_GetModuleDict");
  Object (*item)(Object, const char*) = find<Object (*)(Object, const char*)>("PyDict_GetItemString");
  Object (*get)(Object, const char*) = find<Object (*)(Object, const char*)>("PyObject_GetAttrString");
  int (*set)(Object, const char*, Object) = find<int (*)(Object, const char*, Object)>("PyObject_SetAttrString");
  int (*has_key)(Object, const char*) = find<int (*)(Object, const char*)>("PyMapping_HasKeyString");
  Object (*get_key)(Object, const char*) = find<Object (*)(Object, const char*)>("PyMapping_GetItemString");
  int (*set_key)(Object, const char*, Object) = find<int (*)(Object, const char*, Object)>("PyMapping_SetItemString");
  Object (*str)(Object) = find<Object (*)(Object)>("PyObject_Str");
  const char* (*utf8)(Object) = find<const char* (*)(Object)>("PyUnicode_AsUTF8");
  Object (*from_utf8)(const char*) = find<Object (*)(const char*)>("PyUnicode_FromString");
  void (*decref)(Object) = find<void (*)(Object)>("Py_DecRef");

  bool complete() const {
    return ensure && release && error && clear && modules && item && get && set && has_key && get_key &&
        set_key && str && utf8 && from_utf8 && decref;
  }
};

// A new reference, released at the end of its scope.
struct Owned {
  const Python& py;
  Python::Object p;
  ~Owned() {
    if (p) {
      py.decref(p);
    }
  }
};

// `text` = str(value); false on an error (set).
bool text_of(const Python& py, Python::Object value, std::string& text) {
  Owned s{py, value ? py.str(value) : nullptr};
  const char* c = s.p ? py.utf8(s.p) : nullptr;
  if (c) {
    text = c;
  }
  return c != nullptr;
}

// torch.compiler.config.cache_key_tag with `token` added; before torch.compiler
// is imported, the variable torch reads it from on import.  False on an error (set).
bool add_token(const Python& py, const std::string& token) {
  Python::Object modules = py.modules();
  if (Python::Object config = modules ? py.item(modules, "torch.compiler.config") : nullptr) {
    Owned tag{py, py.get(config, "cache_key_tag")};
    std::string text;
    if (!text_of(py, tag.p, text)) {
      return false;
    }
    Owned value{py, py.from_utf8(with_token(text, token).c_str())};
    return value.p && py.set(config, "cache_key_tag", value.p) == 0;
  }
  Python::Object os = modules ? py.item(modules, "os") : nullptr;
  Owned environ{py, os ? py.get(os, "environ") : nullptr};
  if (!environ.p) {
    return false;
  }
  std::string text;
  if (py.has_key(environ.p, "${variable}")) {
    Owned old{py, py.get_key(environ.p, "${variable}")};
    if (!text_of(py, old.p, text)) {
      return false;
    }
  }
  Owned value{py, py.from_utf8(with_token(text, token).c_str())};
  return value.p && py.set_key(environ.p, "${variable}", value.p) == 0;
}

// torch.compile's caches key an op by its name, not by this library's code:
// its digest joins their keys through the tag (codegen/emit/cache_key.py).
void add_digest_to_cache_key_tag() {
  const Python py;
  if (!py.running || !py.running()) {
    return;  // no Python in this process: no torch.compile either
  }
  bool added = py.complete();
  if (added) {
    const int gil = py.ensure();
    if (!py.error()) {  // (an error pending: a refused load, which fails anyway)
      added = add_token(py, std::string("${prefix}") + cache_digest);
      if (!added) {
        py.clear();
      }
    }
    py.release(gil);
  }
  if (!added) {
    std::fprintf(stderr,
                 "autograd_functions: %s: could not add this library's digest to "
                 "torch.compiler.config.cache_key_tag: torch.compile's caches may serve graphs "
                 "compiled against an earlier build of it (set the tag yourself, or clear them)\n",
                 this_library().c_str());
  }
}

[[maybe_unused]] const bool digest_in_cache_key_tag = (add_digest_to_cache_key_tag(), true);

}  // namespace
}  // namespace autograd_functions_load
#pragma GCC visibility pop
