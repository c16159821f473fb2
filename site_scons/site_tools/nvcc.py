"""The SCons tool `nvcc` (`env.Tool("nvcc")`): SCons finds tools as files in
a site_tools/ folder, so this file names the real one,
autograd_scons.tool.nvcc, where its documentation is."""

from autograd_scons.tool.nvcc import exists, generate  # noqa: F401
