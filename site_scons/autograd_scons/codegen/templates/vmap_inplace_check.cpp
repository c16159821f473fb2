TORCH_CHECK(${name}_bdim.has_value() || !(${others}),
            "vmap: ${op} writes '${name}' in place, and '${name}' is not batched at this level while another "
            "argument is: one tensor cannot hold each example's result (batch '${name}' too, or call the "
            "out-of-place op)");
