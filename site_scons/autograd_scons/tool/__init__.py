"""The SCons tool (`autograd_functions`, and `nvcc`): the builders
`AutogradFunctions` and `AutogradLibrary` (builders.py), the `.cu` objects
(cuda_objects.py), the precompiled prelude (pch.py; its compilers' rules and
the shared one's text and key without SCons: pch_compilers.py), the override
of an edited unit's old text (override.py), the closing report
(closing_lines.py), AutogradLibrary's no-op stamp (library_noop.py), the
compiler launcher (launcher.py) and the SCons versions it runs under
(compat.py).  SCons finds the tools through site_tools/, whose files only
name these.

May import: SCons, the generator (autograd_scons.codegen), and the build
folders' machinery every layer shares (the errors' base and the folder
lock, site_scons/autograd_scons/base/errors.py and site_scons/autograd_scons/base/lock.py; the ownership checks of a
private folder, base/private_folder.py, which imports nothing but those
two): the shared prelude's folder must be ours as load()'s build folders
must.  Not the rest of the build environment (its SCons environment,
compiler, torch and CUDA facts), load() or shipping, nor torch: a build
embedding the tool needs none.  tests/lint/test_import_cycles.py
checks this.
"""
