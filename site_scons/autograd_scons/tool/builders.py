"""SCons tool: `env.AutogradFunctions(outdir, native_functions=..., derivatives=...)`.

Thin glue over `codegen.engine.incremental`.  Generation happens while the
SConscripts are read (write-if-changed, manifest fast path), and the
generated translation units (unity buckets, and the units compiled on their
own: see codegen/engine/buckets.py) are returned as plain source nodes: SCons then
treats them like any other source, so a no-op build costs what the same
files would cost checked in, and only TUs whose bytes (or included files)
changed recompile.  Headers are found by SCons's C scanner through `outdir`
(added to CPPPATH).  The output folder is locked for the whole run, so two
builds of one tree never interleave.

    import autograd_scons   # installed with this project (pip install ...)
    env.Tool('autograd_functions', toolpath=[autograd_scons.TOOLPATH])   # site_tools/'s shim of this module
    cpps = env.AutogradFunctions('gen', native_functions='nf.yaml',
                                 derivatives='derivatives.yaml')
    env.SharedLibrary('ext', cpps + ['module.cpp'])

`python=True` (default) also generates the Functions' Python bindings
(`python/bindings_<k>.cpp`, among the returned TUs: typed `grad_fn`,
`_saved_*` properties; codegen/emit/python_bindings/binding_units.py), which need
`libtorch_python`; `python=False` generates none, for a library used from
C++ alone.  `unity='auto'` (default) picks the bucket count from the number of units
and `-j`; `unity=N` pins it, `unity=0` compiles one TU per unit.  The TUs
come in link order.  While an edited unit overrides its old text in a
bucket (`AUTOGRAD_OVERRIDE`, on where objcopy and nm work on ELF objects),
the call returns object nodes for the edit TUs and, for each bucket holding
old text, a copy of its object with exactly the symbols the edit TUs define
made weak (site_scons/autograd_scons/tool/weaken.py): any environment can link them, and every
other duplicate symbol still fails the link.  `pch=` (False by default;
True, "auto") is the precompiled prelude's policy, the same at every entry
point (codegen/engine/functions_request.py, Pch): the TUs that take the prelude (GCC's or
clang's, tool/pch.py: shared per torch, compiler and flags where
$AUTOGRAD_PRELUDE_DIR is set) come back as their shared objects.  `env.AutogradLibrary(target,
outdir, ...)` also links them into one shared library and, when nothing at
all changed since it was last built, does not even declare the graph.

Options: `--autograd-explain=OP` (or `AUTOGRAD_EXPLAIN=OP[,OP...]` on the
command line or in the environment) says why OP was or was not regenerated
and where it compiles.  `-c` removes the generated folder; `-n` reports what
would be regenerated without writing anything.
"""

import dataclasses
import inspect
import optparse
import os
import sys
import time

import SCons
import SCons.Action
import SCons.Errors
import SCons.Script
import SCons.Util

from autograd_scons.tool import compat
from autograd_scons.tool import launcher
from autograd_scons.tool import override
from autograd_scons.tool import pch
from autograd_scons.tool import build_digest
from autograd_scons.tool import closing_lines
from autograd_scons.tool import json_report
from autograd_scons.tool import library_noop
from autograd_scons.tool import stable_build
from autograd_scons.tool.pch import PCHCOM, compiler_family, never_run, pch_objects
from autograd_scons.codegen.engine import incremental
from autograd_scons.base.errors import OptionError, SpecError, os_error_line
from autograd_scons.codegen.engine.functions_request import FunctionsRequest, Pch
from autograd_scons.base.lock import lock_folder, remove_made_folder
from autograd_scons.codegen.engine.manifest import read_manifest
from autograd_scons.codegen.tree import MANIFEST, OWNED_FOLDERS, TUKind


def _fail(message):
    """One line, non-zero exit, before anything was written."""
    json_report.failed(message)
    sys.stderr.write(f"scons: *** {message}\n")
    SCons.Script.Exit(2)

_option_added = False
# What this tool writes and declares: in the key of AutogradLibrary's stamp.
_TOOL_FILES = [__file__] + [m.__file__ for m in (compat, launcher, override, build_digest,
                                                 pch, pch.pch_compilers, closing_lines, stable_build)]


def _no_duplicate(node):
    # A non-derived file in a duplicating variant dir whose "source" copy does
    # not exist is deleted by SCons (File.exists()); ours have no source copy.
    node.duplicate = 0
    return node


def _compiled(env, out, request, result, nodes, own=(), plain=lambda n: n):
    """`nodes` (the generated TUs) and then `own` (the caller's sources), each
    as an object against the precompiled prelude where the request's policy
    gives it the prelude (codegen/engine/functions_request.py, Pch), else as `plain(node)`."""
    kinds = [t.kind for t in result.tus] if result is not None else [None] * len(nodes)
    kinds += [None] * len(own)  # the caller's sources count as a cold build's TUs
    everything = list(nodes) + list(own)
    cold = sum(1 for k in kinds if k not in (TUKind.EDIT, TUKind.CACHE_KEY))   # (which never take it)
    family = compiler_family(env)
    chosen = [n for n, k in zip(everything, kinds) if request.pch.takes_prelude(k, cold, family)]
    with_prelude = dict(zip(chosen, pch_objects(env, out, chosen, _no_duplicate))) if chosen else {}
    return [with_prelude.get(n) or plain(n) for n in everything]


def AutogradFunctions(env, outdir, native_functions=None, derivatives=None, pch_sources=(), request=None,
                      **options):
    """The generated TUs, then `pch_sources`: your own C++ (e.g. hand-written
    kernels including ATen), compiled against the same precompiled prelude
    where the generated TUs take it (it then reads the prelude instead of
    parsing torch's headers again).  The options are FunctionsRequest.of's
    (codegen/engine/functions_request.py), or `request=` one built already (load()'s)."""
    request = _request(outdir, native_functions, derivatives, options, request)
    pch_sources = list(pch_sources)
    if request.stable is not None:  # (tool/stable_build.py: the kernels in pch_sources, compiled stable)
        return stable_build.stable_objects(env, outdir, request, pch_sources)[0]
    # (they compile alongside the buckets: the automatic bucket count leaves them their cores)
    nodes, result, _ = _generate(env, outdir, request, others=len(pch_sources))
    out = _no_duplicate(env.Dir(outdir))
    objects = _compiled(env, out, request, result, nodes, pch_sources)
    objects = override.overridden(env, out, result, objects[:len(nodes)], _no_duplicate) + objects[len(nodes):]
    build_digest.declare(env, out, nodes, result, objects)
    return objects


_OPTIONS = frozenset(inspect.signature(FunctionsRequest.of).parameters) - {"cls", "native_functions",
                                                                          "derivatives"}


def _request(outdir, native_functions, derivatives, options, request=None):
    """The builder's FunctionsRequest, or one line and exit 2."""
    if request is not None:
        if native_functions is not None or derivatives is not None or options:
            _fail(f"AutogradFunctions({str(outdir)!r}): request= comes with no other option")
        return request
    if native_functions is None or derivatives is None:
        _fail(f"AutogradFunctions({str(outdir)!r}): native_functions= and derivatives= are required")
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        _fail(f"AutogradFunctions({str(outdir)!r}): unknown option {unknown[0]!r} "
              f"(the options: {', '.join(sorted(_OPTIONS))})")
    try:
        return FunctionsRequest.of(native_functions, derivatives, **options)
    except OptionError as e:
        _fail(f"AutogradFunctions({str(outdir)!r}): {e}")


def _generate(env, outdir, request, others=0):
    """(generated TU nodes, incremental.Result, its closing-report record), the
    last two None when cleaning."""
    dry = bool(SCons.Script.GetOption("no_exec"))
    out = _no_duplicate(env.Dir(outdir))
    for sub in OWNED_FOLDERS:
        _no_duplicate(out.Dir(sub))
    nf, d, tags = [env.File(p).srcnode().abspath if p is not None else None  # the real spec, under a variant_dir
                   for p in (request.native_functions, request.derivatives, request.tags)]
    pch.INCLUDES[out.abspath] = request.emit.includes
    env.AppendUnique(CPPPATH=[out])

    if SCons.Script.GetOption("clean"):
        # Do not generate just to delete: name what is there, remove it all.
        m, _ = read_manifest(os.path.join(out.abspath, MANIFEST))
        nodes = [_no_duplicate(out.File(r)) for r in (m.sources if m else [])]
        env.Clean(nodes or [out], out)
        return nodes, None, None
    made = False
    started = time.perf_counter()
    try:
        if not dry:
            made = lock_folder(out.abspath, say=lambda m: print(f"scons: {m}", flush=True))
        result = incremental.update(out.abspath, dataclasses.replace(request, native_functions=nf, derivatives=d,
                                                                     tags=tags),
                                    jobs=int(SCons.Script.GetOption("num_jobs")), others=others, dry_run=dry,
                                    override=override.can_override(env), build_digest=True)
    except (SpecError, OSError) as e:
        if made:  # bad input on a first build leaves no folder behind
            remove_made_folder(out.abspath)
        _fail(str(e) if isinstance(e, SpecError) else f"AutogradFunctions({str(outdir)!r}): {os_error_line(e)}")
    if result.warning:
        sys.stderr.write(f"scons: warning: {result.warning}\n")
    if result.kernels:  # for the check after linking (_shared_library)
        _DECLARED_KERNELS[out.abspath] = result.kernels
    nodes = [_no_duplicate(out.File(r)) for r in result.sources]
    env.Clean(nodes, out)
    if dry:
        # `-n` wrote nothing: a TU this run would create (an edit TU, a new
        # unit's) is shown as generated, so SCons can say what compiles.
        for n, tu in zip(nodes, result.tus):
            if not n.exists() and tu.kind is not TUKind.CACHE_KEY:   # (the digest's own Command writes that)
                env.Command(n, [], SCons.Action.Action(never_run, "would generate $TARGET"))
    alias = env.subst("$AUTOGRAD_GENERATE_ALIAS")
    if alias and not dry:
        # `scons generate`: generate (done while reading) and build nothing.
        # The manifest, written last, stands for the whole generated tree.
        env.Alias(alias, out.File(MANIFEST))
    record = closing_lines.REPORT.add(out, result, env=env, specs=(nf, d, tags), includes=request.emit.includes,
                                       generate_s=time.perf_counter() - started)
    return nodes, result, record


# generated folder -> the kernels its specs declare (the update's model): a
# library linked from its objects is checked for kernels that
# native_functions.yaml declares and no object defines
# (site_scons/autograd_scons/tool/kernel_check.py), before anything can load it.
_DECLARED_KERNELS: dict = {}


def _shared_library(env, *args, **kw):
    """env.SharedLibrary, and for a library with objects of a generated
    folder the check after linking (an action after the link, out of the
    signature: nothing relinks for it)."""
    lib = env["BUILDERS"]["SharedLibrary"](env, *args, **kw)
    sources = [str(getattr(s, "abspath", s)) for n in lib for s in n.sources]
    build_digest.with_library(env, [s for n in lib for s in n.sources])
    folders = sorted({k for k in _DECLARED_KERNELS for s in sources if s.startswith(k + os.sep)})
    if folders:
        declared = [k for f in folders for k in _DECLARED_KERNELS[f]]
        own = [s for n in lib for s in n.sources
               if not any(str(s.abspath).startswith(f + os.sep) for f in _DECLARED_KERNELS)]
        env.AddPreAction(lib[:1], SCons.Action.Action(
            lambda target, source, env: _check_placement(target, own, declared), None))
        env.AddPostAction(lib[:1], SCons.Action.Action(
            lambda target, source, env: _check_kernels(target, declared), None))
    stable = sorted({f for f in stable_build.STABLE_FOLDERS for s in sources if s.startswith(f + os.sep)})
    if stable:  # a stable target's library: its imports audited after each link, its autograd beside it
        stable_build.audited(env, lib, [s for n in lib for s in n.sources], stable_build.STABLE_FOLDERS[stable[0]][0],
                             [k for f in stable for k in stable_build.DECLARED.get(f, ())])
        # returned with the library: whatever installs or packages it takes its autograd along
        lib = SCons.Util.NodeList(list(lib) + list(stable_build.autograd_module(env, lib, stable[0])))
    return lib


def _check_placement(target, own, declared):
    """Before the link: a declared kernel that a hand-written object defines
    in another namespace than `<ns>::native` (site_scons/autograd_scons/tool/kernel_check.py)."""
    from autograd_scons.tool.kernel_check import defined_functions, misplaced_kernels
    defined = {}
    for obj in own:
        lines = defined_functions(obj.abspath)
        if lines:
            defined[obj.abspath] = lines
    found = misplaced_kernels(declared, defined)
    if found:
        raise SCons.Errors.BuildError(node=target[0], errstr=found[0], exitstatus=2)
    return 0


def _check_kernels(target, declared):
    from autograd_scons.tool.kernel_check import missing_kernels, undefined_symbols
    lines = undefined_symbols(target[0].abspath)
    if not lines or not any("::native::" in x for x in lines):
        return 0
    found = missing_kernels(declared, lines)
    if found:
        os.remove(target[0].abspath)  # never left for a load to fail on
        raise SCons.Errors.BuildError(node=target[0], errstr=found[0], exitstatus=2)
    return 0


def AutogradLibrary(env, target, outdir, native_functions=None, derivatives=None, request=None, sources=(),
                    **options):
    """Generate, compile and link the Functions into one shared library
    (the options are AutogradFunctions'); when a stamp (library_noop.py) says
    nothing changed since it was built, return it as a plain file without
    declaring the per-op graph.  `sources`: the stable target's kernels,
    compiled stable into the library (tool/stable_build.py); the C++
    target links the generated code alone (your kernels: AutogradFunctions'
    `pch_sources` and your own SharedLibrary)."""
    request = _request(outdir, native_functions, derivatives, options, request)
    env.AppendUnique(CPPPATH=[_no_duplicate(env.Dir(outdir))])  # for the caller's own code
    if request.stable is not None:
        return stable_build.stable_library(env, target, outdir, request, env.Flatten([sources]))
    if env.Flatten([sources]):
        _fail(f"AutogradLibrary({str(target)!r}): sources= are the stable target's kernels (stable=); the C++ "
              f"target's library holds the generated code alone: link your sources with AutogradFunctions(..., "
              f"pch_sources=...) and env.SharedLibrary")
    env = env.Clone()  # the key must describe the environment the builders use
    nodes, result, record = _generate(env, outdir, request)
    out = _no_duplicate(env.Dir(outdir))
    precompiles = request.pch is not Pch.OFF
    lib_file = env.File(SCons.Util.adjustixes(str(target), env.subst("$SHLIBPREFIX"),
                                              env.subst("$SHLIBSUFFIX")))
    stamp_path = lib_file.abspath + library_noop.SUFFIX
    objects_rel = [os.path.splitext(r)[0] + env.subst("$SHOBJSUFFIX") for r in (result.sources if result else [])]
    alias, targets = env.subst("$AUTOGRAD_GENERATE_ALIAS"), SCons.Script.COMMAND_LINE_TARGETS
    if result is not None and alias and targets and all(t == alias for t in targets):
        return SCons.Util.NodeList([])  # `scons generate`: the objects are not asked for
    commands = ["$SHCXXCOM", "$SHLINKCOM", PCHCOM if precompiles else "", "$AUTOGRAD_PCH_KEY",
                "$AUTOGRAD_PRELUDE_DIR"]
    key = None
    if result is not None and library_noop.fast_path_allowed(env, result, lib_file):
        key = library_noop.library_key(env, out, lib_file, objects_rel, commands, _TOOL_FILES)
        if library_noop.matches(stamp_path, key, lib_file.abspath, out.abspath, objects_rel):
            record.note = "library up to date since its last build: per-op graph not declared"
            return SCons.Util.NodeList([lib_file])
    objects = override.overridden(env, out, result, SCons.Util.NodeList(
        _compiled(env, out, request, result, nodes, plain=lambda n: env.SharedObject(n)[0])), _no_duplicate)
    build_digest.declare(env, out, nodes, result, objects)
    lib = env.SharedLibrary(target, objects)
    env.Clean(lib, env.File(stamp_path))
    if result is not None and not SCons.Script.GetOption("no_exec"):
        # An older stamp can stay: whatever this build changes changes the
        # key (manifest) or the stats it records, so it cannot match again.
        if key is None and not env.get("SHLIBVERSION"):
            key = library_noop.library_key(env, out, lib_file, objects_rel, commands, _TOOL_FILES)
        if key is not None:
            library_noop.write_later(stamp_path, key, lib[0], [os.path.join(out.abspath, r) for r in objects_rel],
                                      out.abspath)
    return lib


def generate(env):
    global _option_added
    problem = compat.version_problem()
    if problem:
        _fail(problem)
    launcher.prefix_launcher(env)
    compat.patch_tslist()
    json_report.install(env)
    if not _option_added:
        _option_added = True
        try:
            SCons.Script.AddOption("--autograd-explain", dest="autograd_explain", action="append",
                                   metavar="OP", help="say why autograd unit OP was or was not "
                                   "regenerated, and where it compiles (repeatable)")
        except optparse.OptionConflictError:  # added by another copy of this tool
            pass
    env.AddMethod(_shared_library, "SharedLibrary")
    env.AddMethod(AutogradFunctions, "AutogradFunctions")
    env.AddMethod(AutogradLibrary, "AutogradLibrary")
    env.SetDefault(AUTOGRAD_DIGESTCOMSTR="Digest of the library's inputs: $TARGET", AUTOGRAD_LAUNCHER="", AUTOGRAD_PCH_KEY="", AUTOGRAD_PCHCOMSTR="", AUTOGRAD_GENERATE_ALIAS="generate",
                   AUTOGRAD_PRELUDE_DIR="", AUTOGRAD_SHAREDPCHCOMSTR="Shared precompiled prelude: $TARGET",
                   # Weak symbols in ELF objects (site_scons/autograd_scons/tool/weaken.py); Mach-O's and COFF's
                   # are not attempted: their buckets are rewritten.
                   AUTOGRAD_OVERRIDE=sys.platform.startswith(("linux", "freebsd")),
                   AUTOGRAD_NM="nm", AUTOGRAD_OBJCOPY="objcopy",
                   AUTOGRAD_WEAKENCOMSTR="Overriding the edited units' old text: weak copy $TARGET")


def exists(env):
    return True
