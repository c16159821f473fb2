STABLE_TORCH_LIBRARY_IMPL(${ns}, ${key}, m) {
  ${impls}
}
