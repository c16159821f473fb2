${banner}
// What calls ${op}, and the kernels written for it by hand.
#pragma once

${type_includes}

${caller}
${kernels}
${batch_rule}
