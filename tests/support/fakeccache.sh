#!/bin/sh
# A stand-in for ccache in front of the stand-in compiler (fakecxx.sh), for
# the build report's launcher statistics (tests/build_report/test_build_report.py):
# installed under the name `ccache` (the report recognises the launcher by
# its name).  Its cache, in $CCACHE_DIR, is keyed by the command line and the
# source's bytes (relative paths: two checkouts share entries); a hit copies
# the stored object, a miss runs the command and stores its output.
# `--print-stats` prints the counters as ccache 4 does (name TAB value).
# One compile at a time (the tests run -j1): the counters are not locked.
set -e
dir=${CCACHE_DIR:?CCACHE_DIR unset}
stats=$dir/stats
mkdir -p "$dir"
[ -f "$stats" ] || printf 'direct_cache_hit\t0\npreprocessed_cache_hit\t0\ncache_miss\t0\n' > "$stats"
if [ "$1" = --print-stats ]; then
    cat "$stats"
    exit 0
fi
out= prev=
for a in "$@"; do
    if [ "$prev" = -o ]; then out=$a; fi
    prev=$a
done
key=$({
    printf '%s' "$*"
    for a in "$@"; do case $a in *.cpp | *.cc) cat -- "$a" ;; esac; done
} | sha256sum | cut -d' ' -f1)
if [ -f "$dir/$key" ]; then
    cp "$dir/$key" "$out"
    counter=direct_cache_hit
else
    "$@"
    cp "$out" "$dir/$key"
    counter=cache_miss
fi
awk -F'\t' -v c="$counter" 'BEGIN { OFS = "\t" } $1 == c { $2 = $2 + 1 } { print }' "$stats" > "$stats.new"
mv "$stats.new" "$stats"
