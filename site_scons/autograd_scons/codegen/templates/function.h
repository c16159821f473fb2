${banner}
${description}
#pragma once

#include "${prelude_h}"
${saved_includes}

namespace ${ns} {

struct ${op} : public ${superclass} {
  using ${superclass}::${superclass};
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "${op}"; }
  void release_variables() override {
    ${release}
  }
  ${will_release}
  void compiled_args(CompiledNodeArgs& args) const override;
  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override;

  ${members}
};

}  // namespace ${ns}
