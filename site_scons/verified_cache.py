"""The helper's old place (until commit 8af3fec): an SConstruct written from
the docs of that time imports it from a checkout's site_scons/,

    sys.path.insert(0, AGF + "/site_scons")
    import verified_cache

and gets autograd_scons.buildenv.verified_cache with one DeprecationWarning naming
its import from the package (autograd_scons/moved_names.py).  Not in the
wheel (setup.py installs the package alone)."""

import sys

from autograd_scons.moved_names import old_top_level

sys.modules[__name__] = old_top_level("verified_cache")
