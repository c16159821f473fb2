"""The generator: native_functions.yaml and derivatives.yaml in, the C++ of
the autograd Functions (and an extension's op kernels and Python bindings)
out, brought up to date incrementally.  Installed as
`autograd_scons.codegen`.

May import: itself only.  No SCons, no torch (the specs are read as yaml;
torch's headers are the compiler's business), nothing of site_scons/: the
SCons tool, the build environment, load() and shipping build on it, never
the reverse.  tests/generator/test_import_cycles.py checks this.
"""
