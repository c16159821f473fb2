"""One package, `autograd_scons`, from the folder site_scons/autograd_scons/
(its generator, `autograd_scons.codegen`, is the sub-folder codegen/): each
import name is its folder's path below site_scons/, so a checkout, an
editable install and a wheel need no import hook.  Every folder of the
package but ship/templates (package data) is a package, so a new module is
installed without being listed.  The rest of the metadata is in setup.cfg."""

from setuptools import find_packages, setup

setup(package_dir={"": "site_scons"},
      packages=find_packages(where="site_scons", include=["autograd_scons", "autograd_scons.*"],
                             exclude=["*.ship.templates", "*.ship.templates.*"]),
      # Files, not modules: the fixed C++ the generator fills in (codegen/templates/),
      # `python -m autograd_scons new`'s project templates, and the tools SCons
      # loads by file name from site_tools/ (TOOLPATH).  All here, since a
      # package_data given to setup() replaces setup.cfg's whole.
      package_data={"autograd_scons": ["site_tools/*.py"],
                    "autograd_scons.codegen.templates": ["*.h", "*.cpp", "stable_python/*.pyt"],
                    "autograd_scons.ship": ["templates/*/*", "templates/*/*/*"]})
