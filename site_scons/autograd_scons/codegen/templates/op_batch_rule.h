namespace ${native_ns} {

// The batch rule of ${op} under vmap (`vmap: {rule: ${name}}`),
// written by hand with ATen's signature: each tensor beside its batch
// dimension (std::nullopt: not batched at this level), each result beside
// its own.  The generated plumbing unwraps the arguments, calls it and wraps
// the results.
${declaration}

}  // namespace ${native_ns}
