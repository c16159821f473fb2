"""Run by SCons before it reads the SConstruct, when this folder is its
site folder (a checkout's site_scons/, or `--site-dir=` the installed
package, as load() runs it).

This folder is the package `autograd_scons`: every module of the tool is
imported by that name (`from autograd_scons.buildenv import environment`),
never by a bare one.  A build uses the copy of the tool it was started with:
this folder, registered here under its package name unless a copy of
`autograd_scons` is already imported.  SCons also puts this folder itself
on `sys.path`; that is harmless, since no module here is imported by a
bare name (tests/python/test_one_package.py checks that each file is
loaded under one name only).
"""


def _register_this_package():
    # (SCons copies this file's globals into the SConstruct's: the imports stay in here.)
    import importlib.util
    import os
    import sys
    if "autograd_scons" in sys.modules:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("autograd_scons", os.path.join(here, "__init__.py"),
                                                  submodule_search_locations=[here])
    package = importlib.util.module_from_spec(spec)
    sys.modules["autograd_scons"] = package
    spec.loader.exec_module(package)


_register_this_package()
del _register_this_package
