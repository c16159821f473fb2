"""The autograd_functions tool's precompiled prelude (GCC's .gch, clang's .pch).

Where `$AUTOGRAD_PRELUDE_DIR` is set (the build environment sets it for
`scons`, load() and the backend: buildenv/environment.py), the TUs take the
shared prelude: torch's headers alone, precompiled once per torch,
compiler and flags in `$AUTOGRAD_PRELUDE_DIR/<key>/`, by whichever build
needs it first, under that folder's lock; a build that finds it there
compiles nothing for it.  Otherwise (a plain SCons environment) a wrapper
header in the output folder (`prelude_pch.h`, so that the precompiled file
is not a main file with `#pragma once`) includes `prelude_impl.h` and is
compiled with exactly the flags of the TUs that take it.

Either way the precompiled file is built first (Requires: order only, so
SCons never hashes its ~0.1-0.5 GB into a TU's signature); what it is built
from is in every object's own signature already (the same command line,
the prelude headers found by the scanner, or the shared key in the path),
plus $AUTOGRAD_PCH_KEY (a stamp of the installed torch, whose headers
SCons does not scan) as a Value.  Under clang it is built with
`-fpch-instantiate-templates` (pch_compilers.py says why).
"""

import os
import sys

import SCons.Action
import SCons.Script
import SCons.Subst
import SCons.Tool

from autograd_scons.base.private_folder import ensure as ensure_private
from autograd_scons.base.lock import BuildLock
from autograd_scons.codegen.tree import BANNER, PCH_HEADER, PRELUDE_IMPL_H
from autograd_scons.codegen.engine.writer import write_atomic, write_files
from autograd_scons.tool import pch_compilers

PCHCOM = ("$( $AUTOGRAD_LAUNCHER $) $SHCXX -o $TARGET -x c++-header $_AUTOGRAD_PRECOMPILE_FLAGS "
          "-c $SHCXXFLAGS $SHCCFLAGS $_CCCOMCOM $SOURCE")
_TEXT = f"""{BANNER}
// Compiled to {PCH_HEADER}.gch (.pch: clang) and taken by every generated TU when pch=True.
#include "{PRELUDE_IMPL_H}"
"""
# output folder -> the formula helpers it was generated with (functions._generate)
INCLUDES: dict = {}


def never_run(target, source, env):
    return 0  # only ever shown by `-n`


def compiler_family(env):
    return pch_compilers.family(env.subst("$SHCXX"))


def _local(env, out, no_duplicate):
    """(precompiled node, header path) of the output folder's own prelude."""
    header = no_duplicate(out.File(PCH_HEADER))
    if not (SCons.Script.GetOption("no_exec") or SCons.Script.GetOption("clean")):
        write_files(out.abspath, {PCH_HEADER: _TEXT})
    elif SCons.Script.GetOption("no_exec") and not header.exists():
        # `-n` on a fresh tree: shown as generated, as the edit TUs are.
        env.Command(header, [], SCons.Action.Action(never_run, "would generate $TARGET"))
    fam = compiler_family(env)
    gch = env.Command(no_duplicate(out.File(PCH_HEADER + pch_compilers.suffix(fam))), header,
                      SCons.Action.Action(PCHCOM, "$AUTOGRAD_PCHCOMSTR"), source_scanner=SCons.Tool.CScanner,
                      _AUTOGRAD_PRECOMPILE_FLAGS=pch_compilers.precompile_flags(fam))
    env.Clean(gch, header)
    return gch, header.path


def _shared_env(env):
    """The TUs' flags less the extension's own: its include paths and name."""
    return env.Clone(CPPPATH=[], CPPDEFINES=pch_compilers.without_extension_define(env.get("CPPDEFINES", [])),
                     _AUTOGRAD_PRECOMPILE_FLAGS=pch_compilers.precompile_flags(compiler_family(env)))


def _shared(env, out):
    """(precompiled node, header path) of the shared prelude."""
    penv = _shared_env(env)
    text = pch_compilers.shared_text(BANNER, INCLUDES.get(out.abspath, ()))
    command = penv.subst(PCHCOM.replace("$TARGET", "OUT").replace("$SOURCE", "IN"), SCons.Subst.SUBST_SIG)
    words = penv.subst("$SHCXX").split()
    compiler = os.path.realpath(env.WhereIs(words[0]) or words[0]) if words else ""
    root = os.path.abspath(env.subst("$AUTOGRAD_PRELUDE_DIR"))
    folder = os.path.join(root, pch_compilers.key(text, command, compiler, env.subst("$AUTOGRAD_PCH_KEY")))
    header = os.path.join(folder, pch_compilers.SHARED_HEADER)
    fam = compiler_family(env)
    if not (SCons.Script.GetOption("no_exec") or SCons.Script.GetOption("clean")):
        try:
            ensure_private(folder, root, "precompiled prelude")
        except OSError as e:  # FolderError: its one line, not a traceback
            sys.stderr.write(f"scons: *** {e}\n")
            SCons.Script.Exit(2)
    target = env.File(header + pch_compilers.suffix(fam))
    if target.has_builder():
        # Another library of this build (its own env.Clone()) declared it: the
        # key folder names the text, the command and the compiler, so it is
        # this one.  Declared again, its action would be another closure, which
        # SCons refuses for one target.
        return [target], header

    def build(target, source, env):
        return _build_shared(penv, target[0].abspath, header, text)
    gch = env.Command(target, [], SCons.Action.Action(build, "$AUTOGRAD_SHAREDPCHCOMSTR"))
    # Another build may be reading it: never deleted before its action, nor by -c.
    env.Precious(gch)
    env.NoClean(gch)
    return gch, header


def _build_shared(penv, path, header, text):
    """Precompile the shared prelude unless another build did: under the key
    folder's lock, to a temporary name renamed into place."""
    with BuildLock(os.path.dirname(path), label="precompiled prelude"):
        folder = os.path.dirname(path)
        for name in os.listdir(folder):  # a killed precompile's (nobody else writes here now)
            if name.startswith(os.path.basename(path) + ".tmp"):
                os.unlink(os.path.join(folder, name))
        if _read(header) != text:  # (never written, or not ours: what was built from it is not trusted)
            if os.path.exists(path):
                os.unlink(path)
            write_atomic(header, text.encode())
        if os.path.exists(path):
            print(f"Precompiled prelude {path}: shared, already built", flush=True)
            return 0
        tmp = f"{path}.tmp{os.getpid()}"
        rc = penv.Execute(penv.subst(PCHCOM, target=penv.File(tmp), source=penv.File(header)))
        if rc:
            if os.path.exists(tmp):
                os.unlink(tmp)
            return rc
        os.replace(tmp, path)
    return 0


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def pch_objects(env, out, sources, no_duplicate):
    """Shared objects of `sources`, each compiled with the precompiled
    prelude taken first; `no_duplicate(node)` marks a node of ours in a
    variant dir."""
    shared = bool(env.get("AUTOGRAD_PRELUDE_DIR"))
    gch, header = _shared(env, out) if shared else _local(env, out, no_duplicate)
    key = env.Value(env.subst("$AUTOGRAD_PCH_KEY"))
    env.Depends(gch, key)
    env.NoCache(gch)
    # A clone, not env.Override(): the .cu objects the caller declares later
    # with `env` were built with the override's flags too (nvcc refused
    # -Winvalid-pch).
    oenv = env.Clone(_CCCOMCOM=env["_CCCOMCOM"] + " $_AUTOGRAD_PCH_FLAGS",
                     _AUTOGRAD_PCH_FLAGS=pch_compilers.use_flags(compiler_family(env), header))
    objects = oenv.SharedObject(sources)
    env.Depends(objects, key)
    env.Requires(objects, gch)
    return objects
