// The kernels ${yaml} names under `dispatch:` (and the batch rules under
// `vmap: {rule: NAME}`), each as the generated ops/<ns>_<op>.h declares it:
// define each one with this signature.
#pragma once

${type_includes}

${blocks}
