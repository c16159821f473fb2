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

void refuse_registration(const char* op, const std::exception& error) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&error);
  const std::string text = c10_error ? c10_error->what_without_backtrace() : error.what();
  // The first line, and the dispatcher's reason where it gives one.
  std::string why = text.substr(0, text.find('\n'));
  const size_t reason = text.find("reason: ");
  if (reason != std::string::npos) {
    why += " " + text.substr(reason, text.find('\n', reason) - reason);
  }
  if (refusal().empty()) {
    refusal() = "autograd_functions: " + this_library() + " cannot register " + op + ": " + why;
    report(refusal());
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
