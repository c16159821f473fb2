"""Where SCons finds this package's tools: the folder site_tools/ beside
this sub-package, holding `autograd_functions.py` and `nvcc.py` (each only
names its module here).  An SConstruct passes it as `toolpath=`;
`autograd_scons.TOOLPATH` re-exports it.  Imports nothing: an SConstruct
reads it before SCons has loaded any tool."""

import os

TOOLPATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_tools")
