${banner}
// What every generated autograd Function declaration needs.
#pragma once

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/saved_variable.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ${ns} {

using torch::autograd::CompiledNodeArgs;
using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::SwapSavedVariables;
using torch::autograd::TraceableFunction;
using torch::autograd::variable_list;

}  // namespace ${ns}
