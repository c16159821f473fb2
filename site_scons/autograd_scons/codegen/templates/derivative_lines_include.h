#if __has_include("../${lines_h}")
#define AGF_DERIVATIVE_LINES_H "../${lines_h}"
#include AGF_DERIVATIVE_LINES_H
#endif
