"""C++ emission: the model (model/) into C++ text: the Functions (functions,
backward, saved, superclass, support, load_check, prelude_headers, lines),
an extension's op kernels and registrations (kernels, dispatch,
registration, forward_ad) and the Python bindings (python_bindings,
python_properties), every fixed line in templates/.

May import: model/, templates/, errors, tree (never parse/: the model is complete before
emission, and emission reads no file but its templates).
"""
