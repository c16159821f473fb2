"""Emission: the model (model/) into text, every fixed line in templates/.
One folder for each thing emitted:

    functions/        the autograd Functions (header and TU per class, the shared preludes)
    op_kernels/       an extension op's TU: registration, Autograd kernel, views, autocast, vmap
    aten_kernels/     a patch's Autograd kernels of ATen's own ops and libtorch's locals
    python_bindings/  the Functions' Python bindings

and, shared by them: options.py (what the caller chooses), lines.py (the
formulas' #line directives), local_names.py (names the generated code
declares), cache_key.py (the generated code's digest) and render.py (one
unit's text, whatever its kind).

May import: model/, templates/, errors, tree (never parse/: the model is complete before
emission, and emission reads no file but its templates).
"""
