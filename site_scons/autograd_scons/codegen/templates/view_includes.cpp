#include <ATen/FunctionalStorageImpl.h>
#include <ATen/FunctionalTensorWrapper.h>
#include <c10/core/InferenceMode.h>
#include <ATen/core/LegacyTypeDispatch.h>
