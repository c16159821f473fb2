namespace ${ns} {
namespace {

// The typed handle of ${op}, looked up once.
const c10::TypedOperatorHandle<${signature}>& ${stem}_handle() {
  static const auto handle = c10::Dispatcher::singleton()
      .findSchemaOrThrow("${qualified}", "${overload}")
      .typed<${signature}>();
  return handle;
}

}  // namespace
}  // namespace ${ns}

namespace ${op_ns} {

// ${op} through the dispatcher, as ATen's at:: functions call theirs: the
// kernel is chosen per call (Autograd, CPU, Meta under fake tensors, ...).
${ret} ${name}(${params}) {
  return ::${ns}::${stem}_handle().call(${args});
}

}  // namespace ${op_ns}
