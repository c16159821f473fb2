auto options = at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory);
