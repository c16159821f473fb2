"""The SCons tool `nvcc` (`env.Tool("nvcc")`): SCons finds tools as files in
a site_tools/ folder, so this file names the real one,
autograd_scons.tool.cuda_objects, where its documentation is."""

from autograd_scons.tool.cuda_objects import exists, generate  # noqa: F401
