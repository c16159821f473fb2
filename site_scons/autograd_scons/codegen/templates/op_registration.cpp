${banner}
// Registration of ${op} (${why})

${own_header}
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>
${transforms}

${caller}
${registration}
