"""The SCons tool (`autograd_functions`, and `nvcc`): the builders
`AutogradFunctions` and `AutogradLibrary` (functions.py), the precompiled
prelude (pch.py), the override of an edited unit's old text (override.py),
the closing report (report.py), AutogradLibrary's no-op stamp (stamp.py),
the compiler launcher (launcher.py) and the SCons versions it runs under
(compat.py).  SCons finds the tools through site_tools/, whose files only
name these.

May import: SCons, the generator (autograd_scons.codegen).  Not the build
environment, load() or shipping: a build embedding the tool needs none.
"""
