#!/usr/bin/env python3
"""A stand-in for g++ in tests that count what SCons rebuilds.

It compiles nothing: each output is a digest of its command line and its
inputs' bytes (so an object changes exactly when its source does), and a
missing input fails like the real compiler would.
"""
import hashlib
import sys

args = sys.argv[1:]
if "--version" in args or "-dumpversion" in args:  # SCons's g++ tool asks
    print("12.2.0")
    sys.exit(0)
out = args[args.index("-o") + 1]
h = hashlib.sha256(" ".join(args).encode())
for a in args:
    if a.endswith((".cpp", ".cc", ".os", ".o")) and a != out:
        with open(a, "rb") as f:
            h.update(f.read())
with open(out, "w") as f:
    f.write(h.hexdigest() + "\n")
