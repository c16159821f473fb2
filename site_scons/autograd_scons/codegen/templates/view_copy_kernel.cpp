
// ${op}: the view ${view} as a new tensor (what functionalization calls
// where it reapplies no views; the view's non-aliasing twin for users).
${ret} ${stem}_composite(${params}) {
  static const auto _view_op = c10::Dispatcher::singleton()
      .findSchemaOrThrow("${view}", "${overload}")
      .typed<${signature}>();
  ${body}
}
