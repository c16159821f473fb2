// A copy marked as a view would take in-place writes that never reach the
// base, while autograd's CopySlices assumes they did (wrong gradients).
TORCH_CHECK(!${base}.has_storage() || !${result}.has_storage() ||
                ${base}.unsafeGetTensorImpl()->is_python_dispatch() || ${result}.is_alias_of(${base}),
            "${op}: its kernel returned a tensor that shares no storage with '${base}': the kernel of a view op must "
            "return a view of its input (as_strided, ATen's views), not a new tensor");
