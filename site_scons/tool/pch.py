"""The autograd_functions tool's precompiled prelude (GCC's .gch).

A wrapper header (so that the precompiled file is not a main file with
`#pragma once`) is compiled with exactly the flags of the TUs that
force-include it.  The .gch is built first (Requires: order only, so SCons
never hashes its ~0.5 GB); what it is built from is in every object's own
signature already (same command line, the prelude headers found by the
scanner), plus $AUTOGRAD_PCH_KEY (e.g. a stamp of the installed torch,
whose headers SCons does not scan) as a Value.
"""

import SCons.Action
import SCons.Script
import SCons.Tool

from autograd_scons.codegen.tree import BANNER, PCH_HEADER, PRELUDE_IMPL_H
from autograd_scons.codegen.writer import write_files

PCHCOM = "$( $AUTOGRAD_LAUNCHER $) $SHCXX -o $TARGET -x c++-header -c $SHCXXFLAGS $SHCCFLAGS $_CCCOMCOM $SOURCE"
_TEXT = f"""{BANNER}
// Compiled to {PCH_HEADER}.gch and force-included (-include) by every generated TU when pch=True.
#include "{PRELUDE_IMPL_H}"
"""


def never_run(target, source, env):
    return 0  # only ever shown by `-n`


def pch_objects(env, out, sources, no_duplicate):
    """Shared objects of `sources`, each compiled with the precompiled
    prelude force-included; `no_duplicate(node)` marks a node of ours in a
    variant dir."""
    header = no_duplicate(out.File(PCH_HEADER))
    if not (SCons.Script.GetOption("no_exec") or SCons.Script.GetOption("clean")):
        write_files(out.abspath, {PCH_HEADER: _TEXT})
    elif SCons.Script.GetOption("no_exec") and not header.exists():
        # `-n` on a fresh tree: shown as generated, as the edit TUs are.
        env.Command(header, [], SCons.Action.Action(never_run, "would generate $TARGET"))
    gch = env.Command(no_duplicate(out.File(PCH_HEADER + ".gch")), header,
                      SCons.Action.Action(PCHCOM, "$AUTOGRAD_PCHCOMSTR"),
                      source_scanner=SCons.Tool.CScanner)
    key = env.Value(env.subst("$AUTOGRAD_PCH_KEY"))
    env.Depends(gch, key)
    env.NoCache(gch)
    env.Clean(gch, header)
    flags = ["-Winvalid-pch", "-include", header.path]
    # A clone, not env.Override(): the .cu objects the caller declares later
    # with `env` were built with the override's flags too (nvcc refused
    # -Winvalid-pch).
    oenv = env.Clone(_CCCOMCOM=env["_CCCOMCOM"] + " $_AUTOGRAD_PCH_FLAGS", _AUTOGRAD_PCH_FLAGS=flags)
    objects = oenv.SharedObject(sources)
    env.Depends(objects, key)
    env.Requires(objects, gch)
    return objects
