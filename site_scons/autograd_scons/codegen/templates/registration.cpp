namespace ${ns} {

// Registers once, however many copies of this file are linked in: an edited
// copy in an edit TU overrides an old one left in its bucket, and the linker
// keeps one definition of this function, which both copies' initialisers call.
void register_${stem}() {
${libraries}
  static const bool registered = [] {
${calls}
    return true;
  }();
  (void)registered;
}

namespace {
const bool ${stem}_registered = (register_${stem}(), true);
}  // namespace

}  // namespace ${ns}
