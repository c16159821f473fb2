"""An extension project's SConstruct in three lines (what `python -m
autograd_scons new` writes, and what `autograd_scons.build_meta`, the PEP 517
backend, drives):

    import autograd_scons.extension as extension
    env = extension.Environment(ARGUMENTS)
    extension.Package(env, "mypkg", sources=Glob("csrc/*.cpp"), cuda_sources=Glob("csrc/*.cu"))

`Environment` is the checkout's SConstruct made reusable: the
`autograd_functions` and `nvcc` tools, the installed torch's flags, the CUDA
kernels or the one line that says why not, `CACHEDIR` (verified entries),
`LAUNCHER`, `PCH`, every core unless `-j` says otherwise.  `Package` builds
the library `$BUILD/<package>/_C.so` (objects and generated sources stay in
`$BUILD`) and writes `$BUILD/wheel.json`, which tells the backend what goes
into the wheel.  Paths inside the build are relative to the project, so the
same project built in two folders gives the same library bytes.
"""

import json
import os
import shlex
import sys

import SCons.Script as S

from . import TOOLPATH

# What the backend reads after the build (build_meta.py).
WHEEL_JSON = "wheel.json"
LIBRARY_STEM = "_C"
# Relative to the library inside the installed package: torch's libraries
# in the same site-packages.  Torch is imported (and its libraries loaded)
# before the library is, so this is a fallback, and no build path is kept.
TORCH_RPATH = "-Wl,-rpath=\\$$ORIGIN/../torch/lib"  # a link flag: $RPATH is substituted twice


def _variables(arguments):
    v = S.Variables(None, arguments)
    v.AddVariables(
        S.PathVariable("BUILD", "build folder (relative paths keep the library reproducible)", "build",
                       S.PathVariable.PathAccept),
        ("CXX", "C++ compiler, also used to link", "g++"),
        ("OPT", "optimisation flags", "-O2"),
        ("UNITY", "generated TUs: auto, N buckets, or 0 (one per op)", "auto"),
        S.EnumVariable("PCH", "precompiled prelude (GCC): auto = on unless CXX is clang", "auto",
                       allowed_values=("auto", "0", "1")),
        S.PathVariable("CACHEDIR", "object cache shared between builds (SCons CacheDir)", "",
                       S.PathVariable.PathAccept),
        ("PYTHON", "Python bindings of the Functions: 1 (default) or 0 (C++ alone)", "1"),
        ("LAUNCHER", "command put before every compile: ccache, sccache, ...", ""),
        S.EnumVariable("CUDA", "the .cu kernels: auto = with a CUDA torch; 0 = never; 1 = always", "auto",
                       allowed_values=("auto", "0", "1")),
        ("TORCH_CUDA_ARCH_LIST", "CUDA architectures, e.g. '8.0;9.0+PTX'",
         os.environ.get("TORCH_CUDA_ARCH_LIST", "")),
    )
    return v


def _fail(message):
    print(f"scons: *** {message}", file=sys.stderr)
    S.Exit(2)


def _launcher(env):
    """$LAUNCHER as the tool's $AUTOGRAD_LAUNCHER, checked to exist."""
    try:
        launcher = shlex.split(env["LAUNCHER"])
    except ValueError as e:
        _fail(f"LAUNCHER {env['LAUNCHER']!r}: {e}")
    if not launcher:
        return
    program = launcher[0]
    found = (os.path.isfile(program) and os.access(program, os.X_OK)) if os.sep in program \
        else env.WhereIs(program)
    if not found:
        _fail(f"LAUNCHER {program!r}: program not found")
    env["AUTOGRAD_LAUNCHER"] = launcher
    env["ENV"].update({k: v for k, v in os.environ.items()
                       if k.startswith(("DISTCC_", "SCCACHE_", "CCACHE_", "ICECC_", "XDG_")) or k in ("HOME", "TMPDIR")})


def Environment(arguments):
    """The environment of an extension build, from the command line's
    variables (`ARGUMENTS`); unknown variables are one line."""
    S.DefaultEnvironment(tools=[])
    variables = _variables(arguments)
    env = S.Environment(tools=["gcc", "g++", "gnulink", "ar"], variables=variables,
                        ENV={"PATH": os.environ.get("PATH", "")})
    S.Help(variables.GenerateHelpText(env), append=True)
    if variables.UnknownVariables():
        _fail(f"unknown variable(s): {', '.join(variables.UnknownVariables())} (see scons -h)")
    given = sys.argv[1:] + os.environ.get("SCONSFLAGS", "").split()
    if not any(a.startswith(("-j", "--jobs")) for a in given):
        S.SetOption("num_jobs", os.cpu_count() or 1)
    build = env["BUILD"]
    env.SConsignFile(os.path.join(build, ".sconsign"))
    env.Replace(LINK="$CXX")
    env.Append(CCFLAGS=S.Split(env["OPT"]))
    env.Tool("autograd_functions", toolpath=[TOOLPATH])  # puts the helpers on sys.path
    env.Tool("nvcc", toolpath=[TOOLPATH])
    import cuda_flags
    import torch_flags
    import verified_cache
    from codegen.emit.options import parse_python
    if env["CACHEDIR"]:
        env.CacheDir(env["CACHEDIR"], verified_cache.VerifiedCacheDir)
    _launcher(env)
    try:
        env["PYTHON"] = parse_python(env["PYTHON"])
    except ValueError as e:
        _fail(f"PYTHON={env['PYTHON']}: {e}")
    try:
        facts = torch_flags.configure(env, os.path.join(build, ".torch.json"), python=env["PYTHON"])
    except RuntimeError as e:  # no torch where SCons runs
        _fail(str(e))
    env["RPATH"] = []
    env.Append(LINKFLAGS=[TORCH_RPATH])
    env["AUTOGRAD_TORCH"] = facts
    try:
        cuda_flags.configure(env, facts, env["CUDA"], env["TORCH_CUDA_ARCH_LIST"])
    except cuda_flags.CudaConfigError as e:
        if not S.GetOption("help"):
            _fail(str(e))
        cuda_flags.configure(env, facts, "0")
    cxx = os.path.basename((shlex.split(env.subst("$CXX")) or [""])[0])
    env["AUTOGRAD_PCH"] = env["PCH"] == "1" or (env["PCH"] == "auto" and "clang" not in cxx)
    return env


def Package(env, package, sources=(), cuda_sources=(), native_functions="native_functions.yaml",
            derivatives="derivatives.yaml", includes=()):
    """The package's library, `$BUILD/<package>/_C.so`: the Functions the
    tool generates from the two yaml files (ops in the namespace
    `<package>::`), the hand-written `sources` and, with a CUDA torch, the
    `.cu` ones.  Returns the library node (also the default target)."""
    build = env["BUILD"]
    objects_dir = os.path.join(build, "obj")
    env.VariantDir(objects_dir, "#", duplicate=False)

    def in_build(nodes):  # objects under $BUILD/obj, not beside the sources
        return [os.path.join(objects_dir, n.srcnode().get_path(env.Dir("#")) if hasattr(n, "srcnode") else str(n))
                for n in env.Flatten([nodes])]

    env = env.Clone()
    env.Append(CPPPATH=["#csrc"])
    own = in_build(sources)
    functions = env.AutogradFunctions(os.path.join(build, "gen"), native_functions=native_functions,
                                      derivatives=derivatives, namespace=f"{package}::autograd",
                                      includes=list(includes), unity=env["UNITY"], pch=env["AUTOGRAD_PCH"],
                                      python=env["PYTHON"], pch_sources=own)  # returned among the TUs
    cuda = env.CudaObjects(in_build(cuda_sources))
    library = env.SharedLibrary(os.path.join(build, package, LIBRARY_STEM), functions + cuda,
                                SHLIBPREFIX="", SHLIBSUFFIX=".so")
    if not S.GetOption("help"):
        _record_inputs(env, library, [native_functions, derivatives])
    facts = env["AUTOGRAD_TORCH"]
    _write_if_changed(os.path.join(build, WHEEL_JSON), {
        "package": package, "library": f"{package}/{LIBRARY_STEM}.so", "python": bool(env["PYTHON"]),
        "torch": facts["version"], "cuda": env.get("AUTOGRAD_CUDA_ARCHS") or [],
        "cuda_skipped": env.get("AUTOGRAD_CUDA_SKIPPED") if cuda_sources else None,
        "cuda_sources": [str(s) for s in env.Flatten([cuda_sources])]})
    env.Default(library)
    return library


def _record_inputs(env, library, specs):
    """What the editable install's up-to-date check stats (load()'s
    build_run): the library's inputs, the specs and SConstruct read while
    reading it, and the generator's and this package's modules."""
    from . import build_run
    helpers = os.path.dirname(TOOLPATH)
    extra = [env.File(p).srcnode().abspath for p in specs] + [env.File("#SConstruct").abspath]
    build_run.record_inputs(library, os.path.join(env["BUILD"], build_run.INPUTS), extra=extra,
                            code_roots=[helpers, os.path.join(os.path.dirname(helpers), "codegen")])


def _write_if_changed(path, data):
    if S.GetOption("no_exec") or S.GetOption("clean"):
        return
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
