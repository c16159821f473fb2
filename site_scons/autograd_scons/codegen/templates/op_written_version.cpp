if (${present}) {
  increment_version(${value});
}
