"""The SCons tool `autograd_functions` (`env.Tool("autograd_functions")`):
SCons finds tools as files in a site_tools/ folder, so this file names the
real one, autograd_scons.tool.builders, where its documentation is."""

from autograd_scons.tool.builders import AutogradFunctions, AutogradLibrary, exists, generate  # noqa: F401
