inline void copy_range(variable_list& out, IndexRange r, const Tensor& t) {
  TORCH_INTERNAL_ASSERT(r.second <= out.size() && r.second - r.first == 1,
                        "gradient slot range does not fit a single tensor");
  out[r.first] = t;
}

inline void copy_range(variable_list& out, IndexRange r, at::ArrayRef<Tensor> ts) {
  TORCH_INTERNAL_ASSERT(r.second <= out.size() && r.second - r.first == ts.size(),
                        "gradient slot range does not fit the tensor list");
  std::copy(ts.begin(), ts.end(), out.begin() + static_cast<std::ptrdiff_t>(r.first));
}

inline bool any_variable_defined(const variable_list& vs) {
  return std::any_of(vs.begin(), vs.end(), [](const Tensor& v) { return v.defined(); });
}

inline std::vector<Tensor> unpack_list(at::ArrayRef<SavedVariable> xs,
                                       const c10::intrusive_ptr<Node>& saved_for) {
  std::vector<Tensor> out;
  out.reserve(xs.size());
  for (const SavedVariable& x : xs) {
    out.emplace_back(x.unpack(saved_for));
  }
  return out;
}

// Undefined tensors come back as nullopt, as the op received them.
inline c10::List<std::optional<Tensor>> unpack_opt_list(at::ArrayRef<SavedVariable> xs) {
  c10::List<std::optional<Tensor>> out;
  out.reserve(xs.size());
  for (const SavedVariable& x : xs) {
    Tensor t = x.unpack();
    out.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
  }
  return out;
}
