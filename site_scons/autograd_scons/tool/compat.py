"""What the autograd_functions tool does about the SCons it runs under: the
oldest version it accepts, and a workaround for a slow spot of some versions.
"""

import SCons
import SCons.Executor

# The oldest SCons this tool is tested with (tests/ship/test_wheel.py installs it).
MIN_SCONS = (4, 5)


def version_problem():
    """One sentence when this SCons is older than MIN_SCONS, else None."""
    have = tuple(int(x) for x in SCons.__version__.split(".")[:2] if x.isdigit())
    if have >= MIN_SCONS:
        return None
    need = ".".join(map(str, MIN_SCONS))
    return (f"the autograd_functions tool needs SCons >= {need}, this is SCons {SCons.__version__} "
            f"(pip install 'scons>={need}')")


def patch_tslist():
    """SCons 4.11's TSList has __getitem__ but no __iter__, so iterating
    $SOURCES rebuilds the node list per element: O(N^2) on every link line
    of a many-object library.  Versions that define
    __iter__ themselves are left alone."""
    if "__iter__" not in SCons.Executor.TSList.__dict__:
        SCons.Executor.TSList.__iter__ = lambda self: iter(self.func())
