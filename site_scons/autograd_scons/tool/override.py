"""The autograd_functions tool's override at link (site_scons/autograd_scons/tool/weaken.py).

While an edited unit's old text stays in its bucket (codegen/engine/buckets.py),
the nodes the tool returns carry the override themselves: the edit TUs'
objects and, for each bucket holding old text, a copy of its object in
which exactly the symbols the edit TUs define are weak.  No link flag is
added to any environment, so whichever environment links them gets the
same library, and any other duplicate symbol still fails the link.
"""

import os
import sys

import SCons.Action
import SCons.Util

from autograd_scons.codegen.tree import bucket_file, edit_file
from autograd_scons.tool.weaken import WeakenError, weaken

# The weakened copies: derived objects, not compiled (the report counts compiles).
WEAK_OBJECTS: set = set()


def can_override(env):
    """The override mode: asked for (AUTOGRAD_OVERRIDE) and possible (nm and
    objcopy found); otherwise an edited unit's bucket is rewritten."""
    return bool(env.get("AUTOGRAD_OVERRIDE")) and all(
        env.WhereIs(env.subst(f"$AUTOGRAD_{tool}")) for tool in ("NM", "OBJCOPY"))


def overridden(env, out, result, items, no_duplicate):
    """`items` (TUs or their objects, in link order), with the edit TUs as
    objects and each bucket holding a shadowed unit's old text replaced by
    a copy of its object in which the symbols the edit TUs define are weak;
    `no_duplicate(node)` marks a node of ours in a variant dir."""
    if result is None or not result.layout.shadowed:
        return items
    suffix = env.subst("$SHOBJSUFFIX")

    def generated(node):  # (relpath of the generated TU, its object node)
        src = node.sources[0] if node.has_builder() and node.sources else node
        rel = os.path.relpath(src.abspath, out.abspath).replace(os.sep, "/")
        return rel, (node if src is not node else no_duplicate(env.SharedObject(node)[0]))

    shadowing = {bucket_file(b) for b in result.layout.shadowing()}
    edits = {edit_file(j) for j in range(result.layout.slots)}
    pairs = [generated(n) for n in items]  # every item is one of ours
    edit_objects = [o for rel, o in pairs if rel in edits]
    weaken = SCons.Action.Action(_weaken, "$AUTOGRAD_WEAKENCOMSTR")
    nodes = []
    for rel, node in pairs:
        if rel in shadowing:
            weak = env.Command(out.File(rel[:-len(".cpp")] + ".weak" + suffix), [node] + edit_objects, weaken)[0]
            weak.attributes.shared = 1
            WEAK_OBJECTS.add(weak)
            node = no_duplicate(weak)
        nodes.append(node)
    return SCons.Util.NodeList(nodes)


def _weaken(target, source, env):
    try:
        weaken(source[0].abspath, [s.abspath for s in source[1:]], target[0].abspath,
               nm=env.subst("$AUTOGRAD_NM"), objcopy=env.subst("$AUTOGRAD_OBJCOPY"))
    except (WeakenError, OSError) as e:
        sys.stderr.write(f"scons: *** {target[0]}: {e}\n")
        return 1
    return 0
