// Formula built-ins (derivatives.yaml): `not_implemented("name")` as an
// input's formula makes backward through it raise; `wrap_opt_if(t, cond)`.
inline at::Tensor not_implemented(const char* name, const char* reason = "") {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "the derivative for '", name, "' is not implemented",
                              (reason && *reason) ? ": " : ".", reason);
  return at::Tensor();
}

inline std::vector<at::Tensor> not_implemented_list(const char* name, const char* reason = "") {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "the derivative for '", name, "' is not implemented",
                              (reason && *reason) ? ": " : ".", reason);
  return {};
}

inline std::optional<at::Tensor> wrap_opt_if(const at::Tensor& t, bool cond) {
  return cond ? std::optional<at::Tensor>(t) : std::nullopt;
}
