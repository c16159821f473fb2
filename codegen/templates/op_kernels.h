${banner}
// The hand-written kernels of ${op} (${keys}).
#pragma once

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/SymInt.h>
#include <optional>
#include <tuple>
#include <vector>

namespace ${native_ns} {

${declarations}

}  // namespace ${native_ns}
