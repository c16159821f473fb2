${banner}
// Registration of ${op} (${why})

${own_header}
#include <torch/library.h>

${registration}
