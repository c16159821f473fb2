return _view_op.call(${args}).clone(at::MemoryFormat::Contiguous);
