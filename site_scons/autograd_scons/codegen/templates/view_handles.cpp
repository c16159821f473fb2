
// The view and its copy through the dispatcher: replay and functionalization
// must reach every key below them (fake tensors, modes), not one kernel.
const c10::TypedOperatorHandle<${signature}>& ${stem}_view_op() {
  static const auto op = c10::Dispatcher::singleton()
      .findSchemaOrThrow("${name}", "${overload}")
      .typed<${signature}>();
  return op;
}

const c10::TypedOperatorHandle<${signature}>& ${stem}_copy_op() {
  static const auto op = c10::Dispatcher::singleton()
      .findSchemaOrThrow("${copy_name}", "${overload}")
      .typed<${signature}>();
  return op;
}
