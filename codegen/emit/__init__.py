"""C++ emission: DifferentiabilityInfo -> autograd Function source text."""
