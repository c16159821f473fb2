"""Patching the installed torch's own autograd Functions: `patch-torch`
builds, from edited specs, a library that replaces libtorch's generated
Functions' members (build.py, patch_sconstruct.py; what libtorch allows is read
off its library: torch_library.py), `run-patched` runs a program with it
preloaded, and `patched_functions()` says which are in effect (preload.py).
docs/patching-torch.md has the workflow.

May import: the build environment (runner, stamp, lock, folder checks,
torch's flags), the generator.  Not the SCons tool directly (the SConstruct
loads it), load() or shipping.
"""
