"""SCons tool: `env.AutogradFunctions(outdir, native_functions=..., derivatives=...)`.

Thin glue over `codegen.incremental`.  Generation happens while the
SConscripts are read (write-if-changed, manifest fast path), and the
generated `.cpp` files are returned as plain source nodes: SCons then treats
them like any other source, so a no-op build costs what the same files would
cost checked in, and only TUs whose bytes changed recompile.  The per-op
headers are found by SCons's C scanner through `outdir` (added to CPPPATH).

    env.Tool('autograd_functions', toolpath=['<this repo>/site_scons/site_tools'])
    cpps = env.AutogradFunctions('gen', native_functions='nf.yaml',
                                 derivatives='derivatives.yaml')
    env.SharedLibrary('ext', cpps + ['module.cpp'])

Options: `--autograd-explain=OP` (or `AUTOGRAD_EXPLAIN=OP[,OP...]` on the
command line or in the environment) says why OP was or was not regenerated.
`-c` removes the generated folder; `-n` reports what would be regenerated
without writing anything.
"""

import atexit
import os
import sys

import SCons.Executor
import SCons.Node
import SCons.Script

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_reports = []          # (outdir, Result, cpp nodes, env), printed at exit
_option_added = False


def _codegen():
    """This repo's generator, even when the tool is loaded from another
    project by toolpath (an installed copy would be the wrong version)."""
    if os.path.isfile(os.path.join(_REPO, "codegen", "incremental.py")) and _REPO not in sys.path:
        sys.path.insert(0, _REPO)
    from codegen import errors, incremental
    from codegen.emit.options import EmitOptions
    return incremental, errors.SpecError, EmitOptions


def _source_path(env, path):
    # srcnode(): under a variant_dir the spec is read where it really is.
    return env.File(path).srcnode().abspath if path is not None else None


def _explain_ops():
    """From `--autograd-explain=OP`, `scons AUTOGRAD_EXPLAIN=OP,OP` or the
    environment variable of that name."""
    ops = list(SCons.Script.GetOption("autograd_explain") or [])
    for text in (SCons.Script.ARGUMENTS.get("AUTOGRAD_EXPLAIN", ""), os.environ.get("AUTOGRAD_EXPLAIN", "")):
        ops += [o for o in text.split(",") if o]
    return ops


def _no_duplicate(node):
    # A non-derived file in a duplicating variant dir whose "source" copy does
    # not exist is deleted by SCons (File.exists()); ours have no source copy.
    node.duplicate = 0
    return node


def AutogradFunctions(env, outdir, native_functions, derivatives, tags=None,
                      namespace="autograd_ext::generated", unity=0, includes=[]):
    incremental, SpecError, EmitOptions = _codegen()
    if isinstance(includes, str):
        includes = [includes]
    try:
        opts = EmitOptions(namespace=namespace, includes=tuple(str(i) for i in includes),
                           unity=int(unity))
    except ValueError as e:
        _fail(f"AutogradFunctions({str(outdir)!r}): {e}")
    out = _no_duplicate(env.Dir(outdir))
    for sub in ("functions", "unity"):
        _no_duplicate(out.Dir(sub))
    paths = [_source_path(env, p) for p in (native_functions, derivatives, tags)]
    env.AppendUnique(CPPPATH=[out])

    if SCons.Script.GetOption("clean"):
        # Do not generate just to delete: name what is there, remove it all.
        m, _ = incremental.read_manifest(os.path.join(out.abspath, incremental.MANIFEST))
        sources = m.sources if m else _on_disk(out.abspath)
        nodes = [_no_duplicate(out.File(r)) for r in sources]
        env.Clean(nodes or [out], out)
        return nodes

    dry = bool(SCons.Script.GetOption("no_exec"))
    try:
        result = incremental.update(out.abspath, *paths, opts=opts, dry_run=dry)
    except SpecError as e:
        _fail(str(e))
    if result.warning:
        sys.stderr.write(f"scons: warning: {result.warning}\n")
    # Headers need no node here: the scanner creates them, in folders that
    # are already marked not to duplicate.
    nodes = [_no_duplicate(out.File(r)) for r in result.sources]
    env.Clean(nodes, out)
    if not _reports:
        atexit.register(_print_reports)
    _reports.append((out, result, nodes, env))
    return nodes


def _on_disk(out_dir):
    try:
        names = os.listdir(os.path.join(out_dir, "functions"))
    except OSError:
        return []
    return sorted(f"functions/{n}" for n in names if n.endswith(".cpp"))


def _fail(message):
    """One line, non-zero exit, before anything was written."""
    sys.stderr.write(f"scons: *** {message}\n")
    SCons.Script.Exit(2)


def _recompiled(nodes, env):
    """How many of the objects built from `nodes` this run compiled (None
    if the objects are not where SharedObject/Object put them)."""
    suffixes = {env.subst("$SHOBJSUFFIX"), env.subst("$OBJSUFFIX")}
    found = compiled = 0
    for n in nodes:
        stem = os.path.splitext(n.name)[0]
        for s in suffixes:
            obj = n.dir.entries.get(os.path.normcase(stem + s))
            if obj is not None and obj.has_builder():
                found += 1
                compiled += obj.get_state() == SCons.Node.executed
    return compiled if found else None


def _print_reports():
    from codegen import incremental
    explain = _explain_ops()
    for out, result, nodes, env in _reports:
        line = incremental.report(result)
        n = _recompiled(nodes, env)
        if n is not None:
            line += f"; {n} object{'s' if n != 1 else ''} recompiled"
        print(f"autograd_functions: {out}: {line}")
        for op in explain:
            print(f"autograd_functions: explain: {incremental.explain(result, op)}")
    sys.stdout.flush()


def _patch_tslist():
    # SCons 4.11's TSList has __getitem__ but no __iter__, so iterating
    # $SOURCES rebuilds the node list per element: O(N^2) on every link
    # line of a many-object library (~1 s at 650 objects).
    if "__iter__" not in SCons.Executor.TSList.__dict__:
        SCons.Executor.TSList.__iter__ = lambda self: iter(self.func())


def generate(env):
    global _option_added
    _patch_tslist()
    if not _option_added:
        _option_added = True
        try:
            SCons.Script.AddOption("--autograd-explain", dest="autograd_explain", action="append",
                                   metavar="OP", help="say why autograd Function OP was or "
                                   "was not regenerated (repeatable)")
        except Exception:  # already added by another copy of this tool
            pass
    env.AddMethod(AutogradFunctions, "AutogradFunctions")


def exists(env):
    return True
