"""Packages, by folder: the generator (`codegen`, no SCons) and the SCons side
(`site_scons/`, installed as the package `autograd_scons`: the tool in
site_tools/ and its helpers), so that a build outside any checkout can load
the tool from the installed distribution (docs/embedding.md).
Every folder under site_scons/ but templates/ (package data) is a package, so a new tool or helper module
is installed without being listed.  The rest of the metadata is in setup.cfg."""

from setuptools import find_namespace_packages, find_packages, setup

_SCONS_SIDE = ["autograd_scons"] + [
    "autograd_scons." + p for p in find_namespace_packages(
        where="site_scons", exclude=["*__pycache__*", "templates", "templates.*"])]

# Data, not code: the fixed C++ the generator fills in (codegen/templates/),
# and `python -m autograd_scons new`'s project templates.  Both here, since a
# package_data given to setup() replaces setup.cfg's whole.
setup(packages=find_packages(include=["codegen", "codegen.*"]) + _SCONS_SIDE,
      package_dir={"autograd_scons": "site_scons"},
      package_data={"codegen.templates": ["*.h", "*.cpp"],
                    "autograd_scons": ["templates/*/*", "templates/*/*/*"]})
