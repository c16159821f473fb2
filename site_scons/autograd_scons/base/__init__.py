"""What every layer of the package shares, below all of them: the errors a
person reads (errors.py: `autograd_scons.Error` and the located
`SpecError`), an output or build folder's lock (lock.py) and the ownership
checks of a folder that must be ours alone (private_folder.py).

May import: itself only.  No SCons, no torch, nothing else of the package:
the generator, the tool, the build environment, load(), shipping and
patch-torch all build on it.  tests/lint/test_import_cycles.py checks this.
"""
