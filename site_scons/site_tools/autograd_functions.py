"""The tool's old place (until commit acac559): an SConstruct written from
the docs of that time loads it from a checkout,

    env.Tool("autograd_functions", toolpath=[AGF + "/site_scons/site_tools"])

and gets the package's tool with one DeprecationWarning naming the new
form (autograd_scons/moved_names.py).  This checkout's own package is used
unless the process already imported one (one copy per process)."""

import os
import sys

_SITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if "autograd_scons" not in sys.modules and _SITE not in sys.path:
    sys.path.insert(0, _SITE)

from autograd_scons.moved_names import old_tool  # noqa: E402 (after the checkout's package is importable)

generate, exists = old_tool("autograd_functions")
