auto [${name}_value, ${name}_bdim] = at::functorch::unwrapTensorAtLevel(${name}, cur_level);
