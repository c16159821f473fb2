_rt.autocast(_lib, "${qualname}", _${stem}_op, "${device}", "${policy}", ${dtype_arg}, ${with_dtype})
