#include <ATen/autocast_mode.h>
