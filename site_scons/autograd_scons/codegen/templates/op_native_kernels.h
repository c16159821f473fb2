namespace ${native_ns} {

// The hand-written kernels (${keys}).
${declarations}

}  // namespace ${native_ns}
