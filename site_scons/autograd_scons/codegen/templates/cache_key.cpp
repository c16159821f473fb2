${banner}
// The digest of this library's generated code, which support.cpp adds to
// torch.compile's cache keys when the library loads (codegen/emit/cache_key.py).

#pragma GCC visibility push(hidden)
namespace autograd_functions_load {
extern const char cache_digest[] = "${digest}";
}  // namespace autograd_functions_load
#pragma GCC visibility pop
