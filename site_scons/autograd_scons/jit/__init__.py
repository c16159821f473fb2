"""load() and load_inline() from Python (loader.py), built by the
SConstruct in sconstruct.py in a private build folder of the user's cache,
then loaded with torch.ops.load_library.

May import: the build environment (runner, lock, folder checks, torch's
flags), the generator; torch when called.  Not SCons, the SCons tool
directly, nor shipping; sconstruct.py, an SConstruct that SCons runs, also
reads the tool's closing report.  tests/lint/test_import_cycles.py
checks this.
"""
