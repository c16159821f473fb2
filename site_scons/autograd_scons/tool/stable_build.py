"""The SCons side of the stable target (`stable=` on AutogradFunctions and
AutogradLibrary; codegen/model/stable.py): generate `stable/`
(codegen/engine/stable_update.py), compile the registration TU and the
caller's kernels (`pch_sources`) with `-DTORCH_TARGET_VERSION=...` and
`-DTORCH_STABLE_ONLY`, link against libtorch_cpu alone (the shims live
there), audit the library's imports after every link (symbol_audit.py),
and write the autograd module next to the library.

No precompiled prelude, no unity buckets, no edit TUs: the stable TUs are
small (the registration TU includes torch/csrc/stable/library.h alone), so
a kernel edit compiles that kernel's file and a formula edit compiles
nothing.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import SCons.Action
import SCons.Errors
import SCons.Script
import SCons.Util

from autograd_scons.codegen.engine.stable_update import STABLE_FOLDER, library_module, update_stable
from autograd_scons.base.errors import SpecError, os_error_line
from autograd_scons.base.lock import lock_folder, remove_made_folder
from autograd_scons.tool import closing_lines, symbol_audit

# What a stable library links besides the caller's own: the shims' library.
# libtorch, libc10 and libtorch_python are left out (a stable library needs
# none of them, and the audit would refuse what it took from them anyway).
_FULL_API_LIBS = ("c10", "torch", "torch_python")
# The autograd module's name beside the library `<name>.so`: `<name>.py`
# would be shadowed by the .so itself, which Python's import tries first.
MODULE_SUFFIX = "_autograd.py"
# generated folder -> the kernels its dispatch: declares (`ns::native::name(`), for the audit's line.
DECLARED: dict = {}
# generated folder -> (its StableTarget, its autograd module): a link with an
# object of that folder is audited, and gets the module beside it.
STABLE_FOLDERS: dict = {}


def _fail(message: str):
    sys.stderr.write(f"scons: *** {message}\n")
    SCons.Script.Exit(2)


def stable_env(env, target):
    """A clone of `env` compiling for the stable target `target`."""
    clone = env.Clone()
    clone.Append(CPPDEFINES=target.cpp_defines())
    clone["LIBS"] = [lib for lib in clone.get("LIBS", []) if str(lib) not in _FULL_API_LIBS]
    clone.AppendUnique(LIBS=["torch_cpu"])
    return clone


def generate(env, outdir, request):
    """(StableResult, the output folder node), or one line and exit 2."""
    out = env.Dir(outdir)
    out.duplicate = 0
    env.AppendUnique(CPPPATH=[out])
    nf, d, tags, helpers = [env.File(p).srcnode().abspath if p is not None else None
                            for p in (request.native_functions, request.derivatives, request.tags,
                                      request.python_helpers)]
    request = dataclasses.replace(request, native_functions=nf, derivatives=d, tags=tags, python_helpers=helpers)
    dry = bool(SCons.Script.GetOption("no_exec")) or bool(SCons.Script.GetOption("clean"))
    made = False
    started = time.perf_counter()
    try:
        if not dry:
            made = lock_folder(out.abspath, say=lambda m: print(f"scons: {m}", flush=True))
        result = update_stable(out.abspath, request, dry_run=dry)
    except (SpecError, OSError) as e:
        if made:
            remove_made_folder(out.abspath)
        _fail(str(e) if isinstance(e, SpecError) else f"AutogradFunctions({str(outdir)!r}): {os_error_line(e)}")
    STABLE_FOLDERS[out.abspath] = (request.stable, result.python, tuple(result.support))
    DECLARED[out.abspath] = tuple(f"{ns}::native::{name}(" for ns, name in result.kernels)
    if not SCons.Script.GetOption("clean"):   # the closing line and the JSON report (its TU kind: stable)
        closing_lines.REPORT.add(out, result.update_result(), env=env, specs=(nf, d, tags),
                                  generate_s=time.perf_counter() - started, target=f"torch>={request.stable.version}")
    return result, out


def stable_objects(env, outdir, request, own=()):
    """The registration TU's object and the caller's kernels' objects, all
    compiled for the stable target."""
    result, out = generate(env, outdir, request)
    compile_env = stable_env(env, request.stable)
    nodes = []
    for rel in result.sources:
        node = out.File(rel)
        node.duplicate = 0
        nodes.append(node)
    env.Clean(nodes, out)
    return [compile_env.SharedObject(n)[0] for n in list(nodes) + list(own)], result, out


# library path -> (objects, StableTarget) / module path -> (library path,
# StableTarget): what the actions below read.  Module-level functions and no
# closures: an action's signature is its function's code, so it stays the
# same from one run to the next, and nothing relinks for it.
_AUDITS: dict = {}
_MODULES: dict = {}


def _audit_action(target, source, env):
    objects, stable, declared = _AUDITS[target[0].abspath]
    problem = symbol_audit.audit(target[0].abspath, objects, env.subst("$AUTOGRAD_NM") or "nm", stable.version,
                                 declared)
    if problem:
        os.remove(target[0].abspath)  # never left for a load to fail on
        raise SCons.Errors.BuildError(node=target[0], errstr=problem, exitstatus=2)
    return 0


def audited(env, lib, objects, stable, declared=()):
    """Audit `lib` after its link (out of its signature: nothing relinks for it);
    `declared`: the kernels dispatch: declares, named as such when no object defines one."""
    _AUDITS[lib[0].abspath] = ([str(getattr(o, "abspath", o)) for o in objects], stable, tuple(declared))
    env.AddPostAction(lib[:1], SCons.Action.Action(_audit_action, None))
    return lib


def _write_module(target, source, env):
    lib_path, stable = _MODULES[target[0].abspath]
    with open(source[0].abspath, encoding="utf-8") as f:
        text = library_module(lib_path, f.read(), stable.version)
    with open(target[0].abspath, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


def autograd_module(env, lib, folder):
    """`<name>_autograd.py` beside the linked stable library `lib`: the line
    that loads the library, then the ops' autograd of `folder`'s generated
    module; and the run-time support it imports, copied beside it.  Written
    by whatever links a stable folder's objects (builders._shared_library)."""
    stable, python, support = STABLE_FOLDERS[folder]
    lib_path = lib[0].abspath
    module_path = os.path.splitext(lib_path)[0] + MODULE_SUFFIX
    _MODULES[env.File(module_path).abspath] = (lib_path, stable)
    module = env.Command(module_path, [env.File(os.path.join(folder, python))],
                         SCons.Action.Action(_write_module, "Autograd module of the stable library: $TARGET"))
    env.Depends(module, env.Value(f"{os.path.basename(lib_path)} torch>={stable.version}"))
    beside = os.path.dirname(lib_path)
    # (support/ files keep their place under stable/: the helpers are a package, stable_autograd_helpers/)
    copies = [env.InstallAs(os.path.join(beside, os.path.relpath(rel, STABLE_FOLDER)),
                            env.File(os.path.join(folder, rel)))[0] for rel in support]
    return list(module) + copies


def stable_library(env, target, outdir, request, sources=()):
    """Link the stable library of the registration and the kernels
    `sources` (audited, its autograd module beside it: builders._shared_library
    does both, and returns both)."""
    objects, _, _ = stable_objects(env, outdir, request, sources)
    return stable_env(env, request.stable).SharedLibrary(target, objects)
