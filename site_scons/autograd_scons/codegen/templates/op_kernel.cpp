${banner}
// Registration and ${kernels} of ${op}

${own_header}
${callee_headers}
${function_header}
${prelude_impl}
#include <ATen/TensorGeometry.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/library.h>
${view_includes}
${manual_include}
${derivative_lines}

namespace ${ns} {
namespace {

using namespace torch::autograd;
${manual_using}

${ret} ${kernel}(${params}) {
  ${body}
}
${view_kernels}

}  // namespace
}  // namespace ${ns}
${transforms}

${caller}
${registration}
