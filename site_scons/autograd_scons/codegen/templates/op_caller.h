namespace ${op_ns} {

// ${op} through the dispatcher, for formulas and kernels (defined in ${definition}).
__attribute__((visibility("hidden"))) ${ret} ${name}(${params});

}  // namespace ${op_ns}
