${banner}
// Python bindings of ${count} autograd Functions (shard ${k}).

#include "${bindings_h}"
${function_headers}

namespace ${ns} {
namespace {

${functions}
bool add_all(PyObject* module) {
  bool ok = true;
  ${calls}
  return ok;
}

// At load: torch.ops.load_library, or a Python module linking this library.
const bool registered = at_load(add_all);

}  // namespace
}  // namespace ${ns}
