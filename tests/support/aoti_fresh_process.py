"""Run in a fresh interpreter by tests/example/test_export_aoti.py: load an
AOTInductor package, with only the extension's library loaded before it
(or, with `--no-library`, not even that), run it on the saved inputs and
compare with the saved eager outputs.

    python aoti_fresh_process.py LIBRARY PACKAGE DATA [--no-library]

Exit 0 when the outputs equal eager's; 1 when they differ; a traceback
(exit 1) when the package cannot run."""

import sys

import torch

library, package, data = sys.argv[1:4]
if "--no-library" not in sys.argv:
    torch.ops.load_library(library)
saved = torch.load(data)
model = torch._inductor.aoti_load_package(package)
out = model(*saved["inputs"])
same = len(out) == len(saved["eager"]) and all(torch.allclose(a, b) for a, b in zip(out, saved["eager"]))
print("outputs equal eager's" if same else f"outputs differ: {out} != {saved['eager']}")
sys.exit(0 if same else 1)
