// ${op}: ${keys}
namespace ${ns}::native {
${declarations}
}  // namespace ${ns}::native

