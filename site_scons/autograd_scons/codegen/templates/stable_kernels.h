// The kernels ${yaml} names under `dispatch:`, in the stable target's types
// (torch/csrc/stable/): define each one with this signature, in a file
// compiled with -DTORCH_STABLE_ONLY (the stable target's builds do that).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

${blocks}
