"""The compiler bench_rebuild.py gives SCons: one fixed command, whatever it does.

SCons signs each object with its command line and the compiler's bytes, so
switching compilers would recompile everything.  This wrapper is the same
file with the same arguments in every run; what it does is read from
`<this file>.cfg` at each call, which SCons never sees:

  mode "standin"  a compile writes a stand-in object: a copy of a real
                  per-op object (the template) whose strong symbols get a
                  per-object suffix, so 711 of them link like 711 real ones
                  (no template yet: a digest, as tests/support/fakecxx.sh writes);
                  the first bucket's also holds the real object of
                  support.cpp, which that bucket includes;
  mode "real"     a compile runs the real compiler.

A precompiled header is compiled for real (later real compiles use it;
unless "real_pch" is false), and a link is real whenever every input object is a real ELF object
(stand-ins made from the template are).  Each call appends a JSON line to the
log: what it was, whether it was real, how long it took (wall, and the
compiler's own CPU: user + sys of the process it ran, from wait4).

Installed by bench_rebuild.py as an executable script (python -S).
"""
import os
import sys
import time

# Imports are kept to the minimum: this runs once per object (711 times to
# bring the graph up to date), so its start-up time matters.
HERE = os.path.realpath(sys.argv[0])
with open(HERE + ".cfg") as f:  # key=value lines (json costs ~15 ms to import)
    CFG = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
ARGS = sys.argv[1:]
REAL = CFG["cxx"]

if "-o" not in ARGS:  # --version, -dumpversion, ...: SCons asks the real one
    os.execvp(REAL, [REAL] + ARGS)

OUT = ARGS[ARGS.index("-o") + 1]
KIND = "pch" if "c++-header" in ARGS else "compile" if "-c" in ARGS else "link"
INPUTS = [a for a in ARGS if a.endswith((".cpp", ".cc", ".h", ".os", ".o")) and a != OUT]


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


CPU = [0.0]  # user + sys of the processes spawned (the compiler's own CPU, not this wrapper's)


def spawn(cmd):
    pid = os.spawnvp(os.P_NOWAIT, cmd[0], cmd)  # no subprocess import (~10 ms)
    _, status, usage = os.wait4(pid, 0)
    CPU[0] += usage.ru_utime + usage.ru_stime
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def digest():
    import hashlib
    h = hashlib.sha256(" ".join(ARGS).encode())
    for a in INPUTS:
        with open(a, "rb") as f:
            h.update(f.read())
    with open(OUT, "w") as f:
        f.write(h.hexdigest() + "\n")
    return 0


def standin():
    template = CFG.get("template")
    if not template:
        return digest()
    for a in INPUTS:  # a missing source fails as the compiler would
        if not os.path.exists(a):
            sys.stderr.write(f"{a}: No such file or directory\n")
            return 1
    import zlib
    tag = f"{zlib.crc32(OUT.encode()):08x}"
    with open(template + ".syms") as f:
        syms = f.read().split()
    support = CFG.get("support")  # support.cpp's real object: defined once, as in a real build
    if support and os.path.basename(OUT) == "support.os":  # unity=0: its own TU
        return spawn(["cp", support, OUT])
    cmd = ["objcopy"] + [f"--redefine-sym={s}={s}_standin_{tag}" for s in syms] + [template, OUT]
    if not (support and OUT.replace(os.sep, "/").endswith("unity/bucket_0.os")):
        return spawn(cmd)
    # The first bucket includes support.cpp: its copy of the template, and it.
    cmd[-1] = OUT + ".template.o"
    rc = spawn(cmd) or spawn(["ld", "-r", "-o", OUT, cmd[-1], support])
    if os.path.exists(cmd[-1]):
        os.remove(cmd[-1])
    return rc


start = time.time()
t0 = time.perf_counter()
# cache_key.cpp (the digest of the generated code, which support.cpp's real
# object refers to) includes nothing: compiled for real in either mode.
if (KIND == "pch" and CFG.get("real_pch") != "0") or \
        (KIND == "compile" and (CFG["mode"] == "real" or os.path.basename(OUT) == "cache_key.os")) or \
        (KIND == "link" and all(is_elf(o) for o in INPUTS)):
    real = True
    rc = spawn([REAL] + ARGS)
else:
    real = False
    rc = digest() if KIND == "link" else standin()
seconds = time.perf_counter() - t0
if CFG.get("log"):
    line = (f'{{"kind": "{KIND}", "out": "{OUT}", "real": {"true" if real else "false"}, '
            f'"start": {start:.4f}, "seconds": {seconds:.4f}, "cpu": {CPU[0]:.4f}, "rc": {rc}}}')
    fd = os.open(CFG["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (line + "\n").encode())
    os.close(fd)
sys.exit(rc)
