${banner}
// Registration of ${op} (differentiated through its CompositeImplicitAutograd kernel)

#include "${own_header}"
#include <torch/library.h>

${registration}
