#!/usr/bin/env python3
"""A stand-in for g++ in tests that count what SCons rebuilds.

It compiles nothing: each output is a digest of its command line and its
inputs' bytes (so an object changes exactly when its source does), and a
missing input fails like the real compiler would.  An object (`-c`) is that
digest wrapped in a real relocatable ELF object (`ld -r -b binary`: a few
milliseconds), so that what the tool does to objects (weakening a bucket's
symbols with nm and objcopy, codegen/weaken.py) runs for real on it.

A `-shared` link makes a real (empty) shared library holding the digest,
which torch.ops.load_library can dlopen (tests/python/test_load*.py).  A file
`.fakecxx_stall` in the folder it runs in, holding `<compile|link>:<marker>`,
makes that step write half its output, create the marker file, and wait a
minute before finishing: a window for a test to kill the build in (SCons
passes no environment variables to its commands).
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import time

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
step = "compile" if "-c" in args else "link"
try:
    with open(".fakecxx_stall") as f:
        stall, _, marker = f.read().strip().partition(":")
except OSError:
    stall = marker = ""
if stall == step and marker:
    with open(out, "wb") as f:
        f.write(b"\x7fELF half-written by fakecxx")
    open(marker, "w").close()
    time.sleep(60)
if step == "link" and "-shared" not in args:
    with open(out, "w") as f:
        f.write(h.hexdigest() + "\n")
    sys.exit(0)
with tempfile.TemporaryDirectory() as tmp:
    # One name for the data in every object: the same symbols in each (as
    # an edited unit's old and new copies define the same functions).
    with open(os.path.join(tmp, "fake_object"), "w") as f:
        f.write(h.hexdigest() + "\n")
    relocatable = os.path.abspath(out) if step == "compile" else os.path.join(tmp, "fake.o")
    subprocess.run(["ld", "-r", "-b", "binary", "-o", relocatable, "fake_object"], cwd=tmp, check=True)
    if step == "link":
        subprocess.run(["ld", "-shared", "-o", os.path.abspath(out), relocatable], check=True)
