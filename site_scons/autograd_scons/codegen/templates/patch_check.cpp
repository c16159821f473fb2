#pragma GCC visibility push(hidden)
namespace autograd_functions_load {

namespace {

struct Patched {
  std::string name;
  bool in_effect;
};

std::vector<Patched>& patched() {
  static std::vector<Patched> all;
  return all;
}

std::string this_library() {
  static const int anchor = 0;
  Dl_info info;
  if (dladdr(&anchor, &info) && info.dli_fname && *info.dli_fname) {
    return info.dli_fname;
  }
  return "<the patch>";
}

// `torch::autograd::generated::<cls>` as the Itanium C++ ABI spells it in
// a symbol (the tool checks, before compiling, that libtorch exports the
// symbols spelled so: site_scons/autograd_scons/torch_patch/torch_library.py).
std::string nested_name(const std::string& cls) {
  return "N5torch8autograd9generated" + std::to_string(cls.size()) + cls;
}

// Whether libtorch's own vtable of `cls` (libtorch_cpu.so's definition, not
// whichever one the global lookup finds first) holds this library's apply:
// what libtorch's autograd kernels construct is then dispatched to it.  A
// library loaded before libtorch (LD_PRELOAD) wins the vtable's
// relocations; one dlopen'ed after it does not, as they were bound then.
bool called_by_libtorch(const std::string& cls) {
  void* self = dlopen(this_library().c_str(), RTLD_LAZY | RTLD_NOLOAD);
  void* torch = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
  bool found = false;
  if (self != nullptr && torch != nullptr) {
    void* ours = dlsym(self, ("_Z" + nested_name(cls) + "5applyEOSt6vectorIN2at6TensorESaIS5_EE").c_str());
    void* table = dlsym(torch, ("_ZTV" + nested_name(cls) + "E").c_str());
    Dl_info info;
    void* entry = nullptr;  // the vtable's ElfW(Sym), for its size
    if (ours != nullptr && table != nullptr && dladdr1(table, &info, &entry, RTLD_DL_SYMENT) && entry != nullptr) {
      auto slots = static_cast<void* const*>(table);
      for (size_t i = 0; i < static_cast<const ElfW(Sym)*>(entry)->st_size / sizeof(void*); ++i) {
        found = found || slots[i] == ours;
      }
    }
  }
  if (self != nullptr) {
    dlclose(self);
  }
  if (torch != nullptr) {
    dlclose(torch);
  }
  return found;
}

}  // namespace

bool claim(const std::type_info& /*type*/, const char* qualified) {
  std::string cls = qualified;
  // The patch's own classes (an edit that changes what a Function saves)
  // are created by its own kernels (claim_kernel): no class of libtorch's to check.
  bool own = cls.rfind("${own_namespace}::", 0) == 0;
  cls = cls.substr(cls.rfind(':') == std::string::npos ? 0 : cls.rfind(':') + 1);
  bool in_effect = own || called_by_libtorch(cls);
  patched().push_back({cls, in_effect});
  static bool said = false;
  if (!in_effect && !said) {
    said = true;
    std::fprintf(stderr,
                 "autograd_scons: the patch %s is loaded but not in effect: libtorch does not call its "
                 "%s (libtorch was loaded before it); run the program under `python -m autograd_scons "
                 "run-patched DIR -- ...`, which preloads it\n",
                 this_library().c_str(), cls.c_str());
  }
  return in_effect;
}

// The Python types of the patch's own classes (grad_fn's type, its _saved_*
// properties) live in a library of their own beside the patch,
// libautograd_torch_patch_python.so, linked with torch's Python module:
// the patch itself is loaded into every process, Python or not, before
// torch is imported.  The first own Function created in a process running
// torch's Python module loads it, holding the GIL; its registration runs
// as it loads.  Found by dlsym, so that nothing here links Python.
void bind_python() {
  static std::atomic<bool> bound{false};
  if (bound.load(std::memory_order_acquire)) {
    return;
  }
  using Initialized = int (*)();
  using Ensure = int (*)();
  using Release = void (*)(int);
  using Occurred = void* (*)();
  using Print = void (*)();
  auto initialized = reinterpret_cast<Initialized>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  void* python_module = dlopen("libtorch_python.so", RTLD_LAZY | RTLD_NOLOAD);
  if (initialized == nullptr || !initialized() || python_module == nullptr) {
    return;  // no Python here (yet): nothing can ask for a grad_fn's Python type
  }
  dlclose(python_module);
  auto ensure = reinterpret_cast<Ensure>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
  auto release = reinterpret_cast<Release>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
  auto occurred = reinterpret_cast<Occurred>(dlsym(RTLD_DEFAULT, "PyErr_Occurred"));
  auto print = reinterpret_cast<Print>(dlsym(RTLD_DEFAULT, "PyErr_Print"));
  if (ensure == nullptr || release == nullptr || occurred == nullptr || print == nullptr) {
    return;
  }
  int gil = ensure();
  if (!bound.load(std::memory_order_acquire)) {  // (the GIL orders the threads that got here)
    std::string path = this_library();
    path = path.substr(0, path.rfind('/') + 1) + "libautograd_torch_patch_python.so";
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
      std::fprintf(stderr, "autograd_scons: the Python types of the patch's own Functions do not load: %s\n",
                   dlerror());
    } else if (occurred() != nullptr) {
      print();  // (their registration's error: said, not left for an unrelated call to raise)
    }
    bound.store(true, std::memory_order_release);
  }
  release(gil);
}

bool claim_kernel(const char* op) {
  patched().push_back({op, true});
  return true;
}

}  // namespace autograd_functions_load
#pragma GCC visibility pop

// What `autograd_scons.patched_functions()` reads through ctypes
// (site_scons/autograd_scons/torch_patch/preload.py): the classes this library defines, and
// whether libtorch calls each one's definitions here.
extern "C" __attribute__((visibility("default"))) size_t autograd_scons_patch_count() {
  return autograd_functions_load::patched().size();
}

extern "C" __attribute__((visibility("default"))) const char* autograd_scons_patch_name(size_t i) {
  return i < autograd_functions_load::patched().size() ? autograd_functions_load::patched()[i].name.c_str()
                                                       : nullptr;
}

extern "C" __attribute__((visibility("default"))) int autograd_scons_patch_in_effect(size_t i) {
  return i < autograd_functions_load::patched().size() && autograd_functions_load::patched()[i].in_effect;
}
