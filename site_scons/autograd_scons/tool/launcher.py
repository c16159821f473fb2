"""$AUTOGRAD_LAUNCHER (ccache, sccache, distcc, ...) before every C/C++
compile the autograd_functions tool's environment runs, not the link.

It goes inside `$( $)`, so it is out of the signature and of the implicit
dependency on the compiler: switching launchers recompiles nothing.  The
object builders' actions are wrapped, not $CXXCOM, so that compilation_db
(which substitutes $CXXCOM) shows the real compiler.  The tool must be
loaded after the compiler tools.
"""

import SCons.Action
import SCons.Tool

_COMPILES = ("CCCOM", "SHCCCOM", "CXXCOM", "SHCXXCOM")


def prefix_launcher(env):
    for builder in SCons.Tool.createObjBuilders(env):
        for suffix, action in list(builder.cmdgen.items()):
            cmd = str(getattr(action, "cmd_list", "")).strip("${}")
            if cmd in _COMPILES:
                kw = {"cmdstr": action.cmdstr} if "cmdstr" in vars(action) else {}
                builder.add_action(suffix, SCons.Action.Action(f"$( $AUTOGRAD_LAUNCHER $) ${cmd}", **kw))
