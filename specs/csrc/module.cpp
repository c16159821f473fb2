// The Python module of the example extension.  A placeholder: the generated
// Functions are linked in next to it; wiring them to operators comes with the
// full example (issue 5).
#include <torch/extension.h>

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "autograd-functions-scons example extension";
}
