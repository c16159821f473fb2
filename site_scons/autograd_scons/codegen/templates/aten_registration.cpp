namespace ${ns} {

// Registers once, however many copies of this file are linked in (an edit
// TU's and its bucket's: the linker keeps one definition of this function).
void register_${stem}() {
  static torch::Library autograd_lib(torch::Library::IMPL, "aten", c10::DispatchKey::Autograd, __FILE__, __LINE__);
  static const bool registered = [] {
    autograd_lib.impl(${name}, torch::dispatch(c10::DispatchKey::Autograd, TORCH_FN(${kernel})));
    ::autograd_functions_load::claim_kernel(${op});
    return true;
  }();
  (void)registered;
}

namespace {
const bool ${stem}_registered = (register_${stem}(), true);
}  // namespace

}  // namespace ${ns}
