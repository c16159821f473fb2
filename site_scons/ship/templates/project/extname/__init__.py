"""extname: its operators, registered with torch when this package is
imported, are `torch.ops.extname.*` (also `extname.ops`)."""

import glob
import os

import torch


def _library():
    # Installed, the library sits beside this file; in an editable install
    # the package's path also holds the build folder's copy.
    for folder in __path__:
        found = sorted(glob.glob(os.path.join(folder, "_C*.so")))
        if found:
            return found[0]
    raise ImportError(f"extname: no _C.so in {list(__path__)}: build it (`pip install .`, or `scons` "
                      "and use build/extname)")


torch.ops.load_library(_library())
ops = torch.ops.extname
