${banner}
// The Autograd kernel of ${op}, as torch's VariableType has it, for a patch
// of the installed torch: registered at the Autograd key over libtorch's own
// (site_scons/autograd_scons/codegen/emit/aten_kernels/aten_kernel.py).

#include ${class_header}
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/FunctionsManual.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/generated/VariableType.h>
#include <torch/library.h>

#include "../load_check.h"

namespace ${ns} {
namespace {

using namespace at;
using namespace torch::autograd;
using namespace torch::autograd::generated;
using namespace torch::autograd::generated::details;
using torch::autograd::VariableType::unpack;

${ret} ${kernel}(c10::DispatchKeySet ks, ${params}) {
  ${body}
}

}  // namespace
}  // namespace ${ns}

${registration}
