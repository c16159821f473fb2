"""AutogradLibrary's free no-op: a stamp of everything a library was built from.

After a successful build, `<library>.autograd-stamp` records a key of the
library's inputs (the generation manifest, hence the specs, generator,
options, layout and every generated file's stat; the compile, link and PCH
command lines as SCons signs them; the compiler's and linker's stat;
libraries found in LIBPATH; SCons and the tool), the stat of the library
and of each object, and the stat of every source and header the objects
were compiled from outside the generated folder (an `includes=` header:
the manifest knows only the specs and what it generated).  When the next
run finds the same key and stats, nothing can need rebuilding, and the
per-op graph need not be declared.
"""

import atexit
import json
import os

import SCons
import SCons.Node
import SCons.Script
import SCons.Subst

from autograd_scons.tool.build_digest import source_files
from autograd_scons.codegen.engine.keys import digest
from autograd_scons.codegen.tree import MANIFEST
from autograd_scons.codegen.engine.writer import stat_of, write_atomic

SUFFIX = ".autograd-stamp"
_pending: list = []    # (path, key, lib node, object paths), written at exit


def fast_path_allowed(env, result, lib_file):
    """Only a run that asks for nothing but this library may skip its graph."""
    if result.parsed or env.get("SHLIBVERSION") or not env.get("AUTOGRAD_LIBRARY_FASTPATH", True):
        return False
    get = SCons.Script.GetOption
    if get("clean") or get("no_exec") or get("question") or "explain" in (get("debug") or []):
        return False
    # Only for the default targets or the library itself: any other target
    # (an object, an alias such as compile_commands) needs the graph.
    launch = env.GetLaunchDir()
    return all(os.path.normpath(os.path.join(launch, str(t))) == lib_file.abspath
               for t in SCons.Script.COMMAND_LINE_TARGETS)


def _found_libs(env):
    libs = []
    libpath = [env.Dir(d).abspath for d in env.Flatten(env.get("LIBPATH", [])) if str(d)]
    for lib in env.Flatten(env.get("LIBS", [])):
        if not isinstance(lib, str):
            libs.append([str(lib), stat_of(env.File(lib).abspath)])
            continue
        for d in libpath:
            for pre, suf in (("$SHLIBPREFIX", "$SHLIBSUFFIX"), ("$LIBPREFIX", "$LIBSUFFIX")):
                p = os.path.join(d, env.subst(pre) + lib + env.subst(suf))
                st = stat_of(p)
                if st is not None:
                    libs.append([p, st])
    return libs


def library_key(env, out, lib_file, objects_rel, commands, tool_files):
    """Digest of everything the library is built from, or None;
    `tool_files`: the tool's modules (what they write and declare)."""
    try:
        with open(os.path.join(out.abspath, MANIFEST), "rb") as f:
            manifest = digest(f.read())
        tool = []
        for path in tool_files:
            with open(path, "rb") as f:
                tool.append(digest(f.read()))
    except OSError:
        return None

    def exe(var):
        words = env.subst(var).split()
        path = env.WhereIs(words[0]) if words else None
        return [path, stat_of(path)]

    parts = [tool, SCons.__version__, manifest, lib_file.path, objects_rel,
             [env.subst(c, SCons.Subst.SUBST_SIG) for c in commands],
             exe("$SHCXX"), exe("$SHLINK"), _found_libs(env)]
    return digest(json.dumps(parts).encode())


def matches(path, key, lib, out_dir, objects_rel):
    try:
        with open(path) as f:
            stamp = json.load(f)
        if stamp["key"] != key or stamp["lib"] != stat_of(lib):
            return False
        objects, inputs = stamp["objects"], stamp["inputs"]
        return (len(objects) == len(objects_rel) and
                all(objects[i] == stat_of(os.path.join(out_dir, r)) for i, r in enumerate(objects_rel)) and
                all(stat_of(path) == st for path, st in inputs))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def write_later(path, key, lib, objects, out_dir):
    """Write the stamp at exit, if the whole build succeeded."""
    if not _pending:
        atexit.register(_write_all)
    _pending.append((path, key, lib, objects, out_dir))


def _write_all():
    # At exit, after SCons saved its database.
    if SCons.Script.GetBuildFailures():
        return
    for path, key, lib, objects, out_dir in _pending:
        if lib.get_state() not in (SCons.Node.executed, SCons.Node.up_to_date):
            continue
        stats = [stat_of(o) for o in objects]
        lib_stat = stat_of(lib.abspath)
        inputs = sorted(p for p in (f.get_abspath() for f in source_files(lib))
                        if not p.startswith(out_dir + os.sep))
        if lib_stat is None or None in stats:
            continue
        try:
            write_atomic(path, json.dumps({"key": key, "lib": lib_stat, "objects": stats,
                                           "inputs": [[p, stat_of(p)] for p in inputs]}).encode())
        except OSError:
            pass  # no stamp: the next run declares the graph, which is always right
