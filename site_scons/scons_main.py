"""`python scons_main.py ARGS...`: SCons's `scons ARGS...`, with this folder
imported as `autograd_scons` first, so that the project's
`import autograd_scons.extension` gets the copy of the package that started
the build (build_meta.py, editable.py), not whichever one sys.path finds."""

import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    if "autograd_scons" not in sys.modules:
        spec = importlib.util.spec_from_file_location("autograd_scons", os.path.join(_HERE, "__init__.py"),
                                                      submodule_search_locations=[_HERE])
        module = importlib.util.module_from_spec(spec)
        sys.modules["autograd_scons"] = module
        spec.loader.exec_module(module)
    from SCons.Script.Main import main
    sys.exit(main())
