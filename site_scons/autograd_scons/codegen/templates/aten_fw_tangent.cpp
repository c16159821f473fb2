auto ${name}_t_raw = toNonOptFwGrad(${value});
auto ${name}_tensor = toNonOptTensor(${value});
auto ${name}_t = (${name}_t_raw.defined() || !${name}_tensor.defined())
  ? ${name}_t_raw : at::${zeros}(${name}_tensor.sym_sizes(), ${name}_tensor.options());
