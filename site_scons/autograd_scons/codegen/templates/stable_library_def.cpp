STABLE_TORCH_LIBRARY(${ns}, m) {
  ${defs}
}
