"""One package, `autograd_scons`, from the folder site_scons/, and its
sub-package `autograd_scons.codegen`, the generator, from the folder
codegen/: so that a build outside any checkout loads the tool from the
installed distribution (docs/embedding.md), and the generator has one name.  Every folder
under site_scons/ but templates (package data) is a package, so a new module
is installed without being listed.  The rest of the metadata is in setup.cfg."""

from setuptools import find_namespace_packages, setup

_PACKAGES = ["autograd_scons"] + [
    "autograd_scons." + p for p in find_namespace_packages(
        where="site_scons", exclude=["*__pycache__*", "ship.templates", "ship.templates.*"])] + \
    ["autograd_scons.codegen"] + ["autograd_scons.codegen." + p for p in find_namespace_packages(
        where="codegen", exclude=["*__pycache__*"])]

# Data, not code: the fixed C++ the generator fills in (codegen/templates/),
# and `python -m autograd_scons new`'s project templates.  Both here, since a
# package_data given to setup() replaces setup.cfg's whole.
setup(packages=_PACKAGES,
      package_dir={"autograd_scons": "site_scons", "autograd_scons.codegen": "codegen"},
      package_data={"autograd_scons.codegen.templates": ["*.h", "*.cpp"],
                    "autograd_scons.ship": ["templates/*/*", "templates/*/*/*"]})
