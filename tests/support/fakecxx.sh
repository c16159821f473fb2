#!/bin/sh
# A stand-in for g++ in tests that count what SCons rebuilds (run as
# `sh fakecxx.sh ARGS...`: support/scons_helpers.py's FAKE_CXX).  POSIX sh,
# not Python: an interpreter's start (~0.1 s here) was half the fast tier's CPU,
# over the ~500 compiles and `--version` questions it answers.
#
# It compiles nothing: each output is a digest of its command line and its
# inputs' bytes (so an object changes exactly when its source does), and a
# missing input fails like the real compiler would.  An object (`-c`) is that
# digest wrapped in a real relocatable ELF object (`ld -r -b binary`: a few
# milliseconds), so that what the tool does to objects (weakening a bucket's
# symbols with nm and objcopy, site_scons/autograd_scons/tool/weaken.py) runs for real on it.
#
# A `-shared` link makes a real (empty) shared library holding the digest
# (and the fingerprints of its objects' sources),
# which torch.ops.load_library can dlopen (the tests of load(), tests/jit/).  A file
# `.fakecxx_stall` in the folder it runs in, holding `<compile|link>:<marker>`,
# makes that step write half its output, create the marker file, and wait a
# minute before finishing: a window for a test to kill the build in (a file
# in the folder, not a variable, so that it stalls only the builds run there).
set -e

out= prev= step=link shared=
for a in "$@"; do
    case $a in
        --version | -dumpversion) echo 12.2.0; exit 0 ;;   # SCons's g++ tool asks
        -c) step=compile ;;
        -shared) shared=1 ;;
    esac
    if [ "$prev" = "-o" ] && [ -z "$out" ]; then out=$a; fi
    prev=$a
done
if [ -z "$out" ]; then echo "fakecxx: no -o in: $*" >&2; exit 1; fi

# The inputs: sources and objects on the command line, other than the output.
for a in "$@"; do
    case $a in
        *.cpp | *.cc | *.os | *.o)
            if [ "$a" != "$out" ] && [ ! -r "$a" ]; then
                echo "fakecxx: error: $a: No such file or directory" >&2
                exit 1
            fi ;;
    esac
done
digest=$({
    printf '%s' "$*"
    for a in "$@"; do
        case $a in *.cpp | *.cc | *.os | *.o) [ "$a" = "$out" ] || cat -- "$a" ;; esac
    done
} | sha256sum | cut -d' ' -f1)

stall= marker=
if [ -f .fakecxx_stall ]; then
    line=$(cat .fakecxx_stall)
    case $line in *:*) stall=${line%%:*} marker=${line#*:} ;; esac
fi
if [ -n "$marker" ] && [ "$stall" = "$step" ]; then
    printf '\177ELF half-written by fakecxx' > "$out"
    : > "$marker"
    sleep 60
fi

if [ "$step" = link ] && [ -z "$shared" ]; then
    echo "$digest" > "$out"
    exit 0
fi
case $out in /*) target=$out ;; *) target=$PWD/$out ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One name for the data in every object: the same symbols in each (as an
# edited unit's old and new copies define the same functions).
echo "$digest" > "$tmp/fake_object"
# Fingerprints (`AGF_FINGERPRINT(...)`, written in a test's source) pass from
# the sources into their objects and from the objects into the library, so a
# process can read, in the library it loaded, which sources made it
# (support/fingerprints.py).
for a in "$@"; do
    case $a in
        *.cpp | *.cc | *.os | *.o)
            [ "$a" = "$out" ] || grep -ao 'AGF_FINGERPRINT([A-Za-z0-9_]*)' -- "$a" || true ;;
    esac
done | sort -u >> "$tmp/fake_object"
if [ "$step" = compile ]; then
    (cd "$tmp" && ld -r -b binary -o "$target" fake_object)
else
    (cd "$tmp" && ld -r -b binary -o fake.o fake_object)
    ld -shared -o "$target" "$tmp/fake.o"
fi
