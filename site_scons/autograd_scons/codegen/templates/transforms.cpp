${includes}

namespace ${ns} {
namespace {

${kernels}

}  // namespace
}  // namespace ${ns}
