namespace autograd_functions_load {
__attribute__((visibility("hidden"))) void refuse_registration(const char* op, const std::exception& error);
}  // namespace autograd_functions_load

namespace ${ns} {

// Registers once, however many copies of this file are linked in: an edited
// copy in an edit TU overrides an old one left in its bucket, and the linker
// keeps one definition of this function, which both copies' initialisers call.
// A registration the dispatcher refuses throws from this static initialiser:
// caught, the library is refused in one line (load_check.h), instead of
// ending the process.
void register_${stem}() {
  static const bool registered = [] {
    try {
${libraries}
${calls}
    } catch (const std::exception& error) {
      autograd_functions_load::refuse_registration(${op}, error);
    }
    return true;
  }();
  (void)registered;
}

namespace {
const bool ${stem}_registered = (register_${stem}(), true);
}  // namespace

}  // namespace ${ns}
