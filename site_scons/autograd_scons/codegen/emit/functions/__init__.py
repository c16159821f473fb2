"""The autograd Functions' C++: one header and one TU per class
(function_files.py), the backward body (backward.py), how saved values are
held (saved.py), the base class (superclass.py), and the shared files every
Function builds on (prelude_headers.py, support.py, load_check.py)."""
