${banner}
// The schemas and kernels of ${yaml}, registered through the stable ABI:
// compiled with -DTORCH_STABLE_ONLY, this file includes no unstable header,
// and the library imports only the stable C shims (the build audits it).
// The autograd of these ops is Python: ${python_module}.

#include <torch/csrc/stable/library.h>

#include "${kernels_header}"

${libraries}
