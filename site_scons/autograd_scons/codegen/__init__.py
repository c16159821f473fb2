"""The generator: native_functions.yaml and derivatives.yaml in, the C++ of
the autograd Functions (and an extension's op kernels and Python bindings)
out, brought up to date incrementally.  Installed as
`autograd_scons.codegen`, its one name (`import codegen` fails).

May import: itself and the base package (autograd_scons.base: the errors, the folder lock).  No SCons, no torch (the specs are read as yaml;
torch's headers are the compiler's business), nothing of site_scons/: the
SCons tool, the build environment, load() and shipping build on it, never
the reverse.

Its stages, each a folder importing only those before it (and the shared
modules below them); tests/lint/test_import_cycles.py checks both
rules:

    model/         the torchgen-shaped model: schemas (schema.py, schema_parts.py),
                   the C++ types (cpp.py), native functions and differentiability
                   infos (native.py, autograd.py)
    parse/         parsing: the yaml files into the model (yaml_io, native_functions,
                   load_derivatives with matching, saved_attributes, grad_usage),
                   the derived foreach infos, and libtorch's installed class
                   declarations (libtorch_classes)
    formula/       the formula translator, on the model: derivatives.yaml's C++
                   formulas as Python (syntax, translate, derivatives), and
                   FunctionsManual's helpers in Python (torch_helpers/: runtime
                   code of the generated Python, the one place here that imports
                   torch; the generator reads it through helper_names)
    emit/          emission: the model into text, through templates/, a folder for each
                   thing emitted (functions/, op_kernels/, aten_kernels/, python_bindings/)
    engine/        the incremental engine: units and their keys, the manifest, the
                   compile layout and its files, the writer, the parse cache, the
                   update itself (incremental.py), its summary line

Shared by every stage: tree.py (the names of the generated tree) and the
base package's errors (site_scons/autograd_scons/base/errors.py: the error
base and the located error); cli.py is the commands of `python -m
autograd_scons` that run the generator.
"""

if __name__ == "codegen":
    # A checkout's root on sys.path makes this folder importable by its
    # folder name: a second copy of every module, whose state (caches,
    # registries) the tool's copy would never see.
    raise ImportError("the generator is `autograd_scons.codegen` (site_scons/autograd_scons/codegen/ in a checkout): "
                      "import it by that name")
