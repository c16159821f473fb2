"""The build report as data, and what reads it (docs/ci.md).

Every build (`scons`, `load()`, the wheel backend, `patch-torch`) writes a
JSON report when asked (`AUTOGRAD_REPORT=path`): per generated folder the
units and why each was (not) regenerated, the TUs and their kinds, each
object's fate (compiled, retrieved from the CacheDir, a launcher's cache
hit, up to date), the wall times, and the torch, compiler and flags
identity.

    schema.py          the report's schema (versioned; `report --schema` prints it) and its validator
    records.py         a generated folder's units and TUs, from the generator's update result
    document.py        the whole report: its summary, the atomic write, reading one back
    launcher_stats.py  sccache's and ccache's statistics, before and after a build
    gate.py            `python -m autograd_scons report REPORT.json --min-hit-rate R --max-compiles N`
    bench*.py          `python -m autograd_scons bench PROJECT`: cold, no-op, edits, a second checkout

May import: the generator (autograd_scons.codegen: the reasons' vocabulary,
the kinds of TUs and units), and the one atomic writer it has.  No SCons,
no torch: the SCons side (tool/json_report.py) fills the report, load()
and patch-torch write theirs when no build ran, and the commands read them.
tests/lint/test_import_cycles.py checks this.
"""
