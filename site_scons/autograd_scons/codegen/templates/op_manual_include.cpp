#include <torch/csrc/autograd/FunctionsManual.h>
