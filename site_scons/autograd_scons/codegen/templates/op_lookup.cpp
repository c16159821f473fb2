static auto op = c10::Dispatcher::singleton()
    .findSchemaOrThrow("${name}", "${overload}")
    .typed<${signature}>();
