#!/usr/bin/env python3
"""A stand-in for nvcc in tests that count what SCons rebuilds (as
fakecxx.sh stands in for g++): installed as `<folder>/bin/nvcc` by
tests/support/cuda_helpers.py, found through CUDA_HOME.

`--version` says the release in $FAKE_NVCC_RELEASE (default 13.0), as
nvcc words it; `--dryrun` names its toolkit folder; a compile writes a
digest of its command line and of the `.cu` source's bytes, and fails like
nvcc when the source is missing.
"""
import hashlib
import os
import sys

args = sys.argv[1:]
release = os.environ.get("FAKE_NVCC_RELEASE", "13.0")
if "--version" in args:
    print("nvcc: NVIDIA (R) Cuda compiler driver (stand-in)")
    print(f"Cuda compilation tools, release {release}, V{release}.1")
    print(f"Build cuda_{release}.fake")
    sys.exit(0)
if "--dryrun" in args:
    print(f"#$ TOP={os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}", file=sys.stderr)
    sys.exit(0)
out = args[args.index("-o") + 1]
h = hashlib.sha256(" ".join(args).encode())
for a in args:
    if a.endswith(".cu"):
        try:
            with open(a, "rb") as f:
                h.update(f.read())
        except OSError as e:
            sys.exit(f"nvcc fatal   : Could not open input file {a}: {e.strerror}")
with open(out, "w") as f:
    f.write(h.hexdigest() + "\n")
