${banner}
// Out-of-line definitions every generated TU calls, compiled once per
// library (codegen/templates/support.cpp, filled by codegen/emit/support.py).

#include "${prelude_impl_h}"
#include "${load_check_h}"

#pragma GCC visibility push(hidden)
namespace autograd_functions_load {

// Non-empty once this library was refused: why.
std::string& refusal() {
  static std::string why;
  return why;
}

static std::string this_library() {
  static const int anchor = 0;
  Dl_info info;
  if (dladdr(&anchor, &info) && info.dli_fname && *info.dli_fname) {
    return info.dli_fname;
  }
  return "<a library>";
}

// ImportError in the Python thread loading us (CPython raises it when
// dlopen returns), or one line on stderr when no Python is running.
static void report(const std::string& message) {
  using IsInitialized = int (*)();
  using Ensure = int (*)();
  using Release = void (*)(int);
  using SetString = void (*)(void*, const char*);
  auto initialized = reinterpret_cast<IsInitialized>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  auto ensure = reinterpret_cast<Ensure>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
  auto release = reinterpret_cast<Release>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
  auto set = reinterpret_cast<SetString>(dlsym(RTLD_DEFAULT, "PyErr_SetString"));
  auto type = reinterpret_cast<void**>(dlsym(RTLD_DEFAULT, "PyExc_ImportError"));
  if (initialized && ensure && release && set && type && initialized()) {
    int state = ensure();
    set(*type, message.c_str());
    release(state);
  } else {
    std::fprintf(stderr, "%s\n", message.c_str());
  }
}

bool claim(const std::type_info& type, const char* cls) {
  static std::vector<c10::RegistrationHandleRAII> markers;
  const std::string me = this_library();
  const std::string name = std::string("${marker_namespace}::") + type.name();
  auto& dispatcher = c10::Dispatcher::singleton();
  if (auto other = dispatcher.findSchema({name, ""})) {
    if (other->debug() != me && refusal().empty()) {
      refusal() = "autograd_functions: refusing to load " + me + ": its autograd Function " + cls +
          " is already defined by " + other->debug() + ", loaded before it; two libraries must not " +
          "define classes of one qualified name (compiled autograd and Python would take one's " +
          "backward for the other's): give each its own namespace= (the default, " +
          "'<op namespace>::autograd', is unique to its ops)";
      report(refusal());
    }
    return false;
  }
  markers.push_back(dispatcher.registerDef(c10::FunctionSchema(name, "", {}, {}), me, {}));
  return true;
}

}  // namespace autograd_functions_load
#pragma GCC visibility pop

namespace ${ns} {

variable_list compiled_autograd_apply_functional(
    const PackedArgs& packed_args,
    const torch::autograd::edge_list& next_edges,
    SwapSavedVariables& saved,
    const variable_list& grads,
    const std::string& name) {
  auto output_metadata = torch::dynamo::autograd::IValuePacker<
      std::vector<std::optional<torch::autograd::InputMetadata>>>::pack(
      torch::dynamo::autograd::get_input_metadata(next_edges));
  return torch::dynamo::autograd::getPyCompilerInterface()->call_function(
      saved.get_py_compiler(), "apply_functional", name, grads, packed_args.vec(), output_metadata);
}

void compiled_autograd_bind(
    SwapSavedVariables& saved,
    const std::string& key,
    FunctionalApply fn,
    const PackedTypeOf* packed_types,
    size_t n) {
  std::vector<at::TypePtr> schema;
  schema.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    schema.push_back(packed_types[i]());
  }
  torch::dynamo::autograd::getPyCompilerInterface()->bind_function(
      saved.get_py_compiler(), key, fn, std::move(schema));
}

}  // namespace ${ns}

namespace ${ns} {

${step_definitions}
}  // namespace ${ns}
