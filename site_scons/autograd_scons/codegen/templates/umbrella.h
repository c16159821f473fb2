${banner}
// Every generated autograd Function.
#pragma once

#include "${prelude_h}"

${function_headers}
