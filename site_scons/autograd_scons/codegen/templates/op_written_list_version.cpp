for (const auto& _written : ${name}) {
  increment_version(_written);
}
