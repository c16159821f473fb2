"""The build environment of every build of this project: the checkout's
`SConstruct` (`scons`) and load()'s own (jit/sconstruct.py) both call it,
so that a load() compiles exactly as `scons` does: the same compiler
variables, precompiled prelude, CacheDir, LAUNCHER, torch and CUDA flags,
linker.  Call from an SConstruct:

    vars = Variables(None, ARGUMENTS)
    environment.add_variables(vars)          # then the SConstruct's own
    env, facts = environment.environment(vars, cuda=lambda env: True)

`cuda(env)` says whether the .cu kernels are configured (cuda_flags; the
reason they are left out is printed).  The environment has PCH's policy
(codegen/engine/functions_request.py, Pch) under AUTOGRAD_PCH, for the builders' `pch=`; the
tools autograd_functions and nvcc loaded, and torch's flags.
"""

import os
import shlex
import sys

import SCons.Errors
import SCons.Script as S

from autograd_scons.tool.toolpath import TOOLPATH
from autograd_scons.buildenv import cuda_flags
from autograd_scons.buildenv import launcher_reach
from autograd_scons.buildenv import prelude_folders
from autograd_scons.buildenv import torch_flags
from autograd_scons.buildenv import unfinished_build
from autograd_scons.buildenv import verified_cache
from autograd_scons.codegen.engine.functions_request import Pch


def add_variables(vars):
    vars.AddVariables(
        S.PathVariable("BUILD", "build folder", "build", S.PathVariable.PathAccept),
        ("CXX", "C++ compiler, also used to link", "g++"),
        ("OPT", "optimisation flags", "-O2"),
        ("UNITY", "compile layout: auto = buckets sized from the op count and -j (docs/compile-layout.md); "
                  "N = N unity buckets; 0 = one TU per op", "auto"),
        ("FUSE_LD", "linker (-fuse-ld=...): auto = gold when installed (3x faster than bfd on the "
                    "711 objects of SPECS=torch), bfd, gold, lld", "auto"),
        S.EnumVariable("PCH", "precompiled prelude header (GCC's .gch, clang's .pch): auto = for the edit "
                       "TUs, and for a cold build's TUs where they are enough to pay for it "
                       "(docs/compile-layout.md); 1 = every TU; 0 = none", "auto",
                       allowed_values=("auto", "0", "1")),
        S.PathVariable("PRELUDE_DIR", "where the precompiled prelude is shared, one per torch, compiler and "
                       "flags (default: $AUTOGRAD_EXTENSIONS_DIR/_prelude)", "", S.PathVariable.PathAccept),
        ("AUTOGRAD_EXPLAIN", "OP[,OP...]: say why these Functions were (not) regenerated", ""),
        ("AUTOGRAD_REPORT", "PATH: write the build's JSON report there (docs/ci.md)", ""),
        S.PathVariable("CACHEDIR", "object cache shared between checkouts (SCons CacheDir)", "",
                       S.PathVariable.PathAccept),
        ("PYTHON", "Python bindings of the Functions (typed grad_fn, _saved_* properties): 1 (default), "
                   "or 0 for a library used from C++ alone (no libtorch_python, no Python symbols)", "1"),
        ("LAUNCHER", "command put before every compile, not the link: ccache, sccache, distcc, "
                     "icecc, ... (out of the signature: switching it recompiles nothing)", ""),
        S.EnumVariable("CUDA", "the example's .cu kernels (nvcc): auto = with a CUDA build of torch; "
                       "0 = never; 1 = always (an error with a CPU-only torch)", "auto",
                       allowed_values=("auto", "0", "1")),
        ("TORCH_CUDA_ARCH_LIST", "CUDA architectures, e.g. '8.0;9.0+PTX' (default: $TORCH_CUDA_ARCH_LIST; "
                                 "unset: the visible GPUs', else torch's oldest with PTX)",
         os.environ.get("TORCH_CUDA_ARCH_LIST", "")),
    )


def environment(vars, cuda):
    """(env, torch facts) configured from `vars`; exits with one line on bad values."""
    # The compilers, the linker and the launchers run in the user's whole
    # environment, as torch.utils.cpp_extension runs them (a CXX wrapper's
    # settings, ccache/sccache/distcc's, credentials): SCons's default of
    # PATH alone would drop them.  ENV is in no signature: a variable that
    # changes recompiles nothing.
    # The tools autograd_functions and nvcc from this package's site_tools/,
    # for the clones an SConscript makes too.
    env = S.Environment(tools=["gcc", "g++", "gnulink", "ar"], variables=vars, ENV=dict(os.environ),
                        toolpath=[TOOLPATH])
    S.Help(vars.GenerateHelpText(env), append=True)
    unknown = vars.UnknownVariables()
    if unknown:
        sys.exit(f"scons: *** unknown variable(s): {', '.join(unknown)} (see scons -h)")

    # Every core by default, as ninja does; an explicit -j (also -j1) wins.
    given = sys.argv[1:] + os.environ.get("SCONSFLAGS", "").split()
    if not any(a.startswith(("-j", "--jobs")) for a in given):
        S.SetOption("num_jobs", os.cpu_count() or 1)

    build = env["BUILD"]
    env["AUTOGRAD_PCH"] = Pch.parse(env["PCH"])
    _database(env, build)
    _compiler(env)
    env.Replace(LINK="$CXX")  # not $SMARTLINK, which walks every source on each link
    env.Append(CCFLAGS=S.Split(env["OPT"]))
    if env["CACHEDIR"]:
        # Entries are checked against a digest before use: a corrupt one is evicted and rebuilt.
        try:
            env.CacheDir(env["CACHEDIR"], verified_cache.VerifiedCacheDir)
        except SCons.Errors.SConsEnvironmentError as e:  # SCons's own words, not a traceback
            print(f"scons: *** CACHEDIR={env['CACHEDIR']}: {str(e).rstrip(': ')} (a damaged `config` "
                  "there: remove it, or choose another CACHEDIR)", file=sys.stderr)
            S.Exit(2)
    _launcher(env)

    # compilation_db hooks the object emitters: load it before any object exists,
    # and only when asked (its JSON is rebuilt on every run).
    if "compile_commands" in S.COMMAND_LINE_TARGETS:
        env.Tool("compilation_db")
        env.Alias("compile_commands", env.CompilationDatabase("compile_commands.json"))

    env.Tool("autograd_functions")
    env.Tool("nvcc")
    # One precompiled prelude per torch, compiler and flags, for every build;
    # where the default folder cannot be made (a read-only or absent home, as
    # in a build container), the build folder's own, said in one line.
    shared = os.path.abspath(env["PRELUDE_DIR"] or prelude_folders.default_folder())
    if env["PRELUDE_DIR"] or prelude_folders.can_make(shared):
        env["AUTOGRAD_PRELUDE_DIR"] = shared
    elif not S.GetOption("help"):
        print(f"scons: warning: cannot make {shared}: the precompiled prelude is kept in the build "
              "folder (PRELUDE_DIR= shares it)", file=sys.stderr)
    from autograd_scons.codegen.emit.options import parse_python  # (importable once the tool is loaded)
    from autograd_scons.base.errors import OptionError
    try:
        env["PYTHON"] = parse_python(env["PYTHON"])
    except OptionError as e:
        print(f"scons: *** PYTHON={env['PYTHON']}: {e}", file=sys.stderr)
        S.Exit(2)
    facts = torch_flags.configure(env, os.path.join(env.Dir(build).abspath, ".torch.json"),
                                 python=env["PYTHON"])
    if cuda(env):
        try:  # the .cu kernels, or the one line that says why not (nvcc.CudaObjects)
            cuda_flags.configure(env, facts, env["CUDA"], env["TORCH_CUDA_ARCH_LIST"])
        except cuda_flags.CudaConfigError as e:
            if not S.GetOption("help"):
                print(f"scons: *** {e}", file=sys.stderr)
                S.Exit(2)
            # `scons -h` still lists the variables (one of them is the way out).
            print(f"scons: warning: {e}", file=sys.stderr)
            cuda_flags.configure(env, facts, "0")
    fuse_ld = env["FUSE_LD"]
    if fuse_ld == "auto":
        fuse_ld = "gold" if env.WhereIs("ld.gold") else ""
    if fuse_ld and fuse_ld != "bfd":
        env.Append(LINKFLAGS=[f"-fuse-ld={fuse_ld}"])
    return env, facts


def _database(env, build):
    """One database per build folder, inside it: a relative name would be
    taken from the SConstruct's folder (the tool's own, for load()), shared by
    every build and unwritable in a read-only install."""
    folder = env.Dir(build).abspath
    os.makedirs(folder, exist_ok=True)
    db = os.path.join(folder, unfinished_build.DATABASE)
    env.SConsignFile(db)
    if not (S.GetOption("help") or S.GetOption("no_exec") or S.GetOption("question")):
        unfinished_build.begin(db, env.Dir("#").abspath, folder)


def _compiler(env):
    """A compiler that is not there: one line naming it, not make's `Error 127`."""
    try:
        words = shlex.split(env.subst("$CXX"))
    except ValueError as e:
        words = []
        print(f"scons: *** CXX {env['CXX']!r}: {e}", file=sys.stderr)
        S.Exit(2)
    program = words[0] if words else ""
    if not _found(env, program) and not S.GetOption("help"):
        print(f"scons: *** CXX {program!r}: compiler not found (set CXX to an installed C++ compiler)",
              file=sys.stderr)
        S.Exit(2)


def _found(env, program) -> bool:
    if os.sep in program:
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return bool(program and env.WhereIs(program))


def _launcher(env):
    try:
        launcher = shlex.split(env["LAUNCHER"])
    except ValueError as e:  # unbalanced quotes
        print(f"scons: *** LAUNCHER {env['LAUNCHER']!r}: {e}", file=sys.stderr)
        S.Exit(2)
    if not launcher:
        return
    program = launcher[0]
    if not _found(env, program):
        print(f"scons: *** LAUNCHER {program!r}: program not found", file=sys.stderr)
        S.Exit(2)
    # The tool puts $AUTOGRAD_LAUNCHER before every compile, inside $( $);
    # what the launcher reads (hosts, cache backends, credentials) is in ENV.
    env["AUTOGRAD_LAUNCHER"] = launcher
    # distcc's hosts or sccache's Redis not answering: one line, once per build.
    launcher_reach.guard(env, launcher)
