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
the library `$BUILD/<package>/_C.so` (for the stable target, pyproject.toml's
`[tool.autograd-scons] stable`, also `_C_autograd.py` beside it) (objects and generated sources stay in
`$BUILD`) and writes `$BUILD/wheel.json`, which tells the backend what goes
into the wheel.  Paths inside the build are relative to the project, so the
same project built in two folders gives the same library bytes.
"""

import json
import os

import SCons.Script as S

from autograd_scons.tool.toolpath import TOOLPATH

__all__ = ["Environment", "Package"]  # (docs/shipping.md)

# What the backend reads after the build (build_meta.py).
WHEEL_JSON = "wheel.json"
LIBRARY_STEM = "_C"
# Relative to the library inside the installed package: torch's libraries
# in the same site-packages.  Torch is imported (and its libraries loaded)
# before the library is, so this is a fallback, and no build path is kept.
TORCH_RPATH = "-Wl,-rpath=\\$$ORIGIN/../torch/lib"  # a link flag: $RPATH is substituted twice


def _use_this_package():
    """Its tools (site_tools/) found without a toolpath, by every
    environment of the project's SConstruct."""
    import SCons.Tool
    if TOOLPATH not in SCons.Tool.DefaultToolpath:
        SCons.Tool.DefaultToolpath.insert(0, TOOLPATH)


def Environment(arguments):
    """The environment of an extension build (buildenv.environment: the checkout's
    own, also load()'s) from the command line's variables (`ARGUMENTS`)."""
    _use_this_package()
    from autograd_scons.buildenv import environment
    S.DefaultEnvironment(tools=[])
    variables = S.Variables(None, arguments)
    environment.add_variables(variables)
    env, facts = environment.environment(variables, cuda=lambda env: True)
    env["RPATH"] = []
    env.Append(LINKFLAGS=[TORCH_RPATH])
    # __FILE__ of torch's and Python's headers (asserts) without the folders
    # they sit in, which differ between build environments (pip's isolated
    # one is a temporary folder); out of the signature, as their -isystem.
    import sysconfig
    env.Append(CXXFLAGS=["$(", f"-ffile-prefix-map={facts['root']}=torch",
                         f"-ffile-prefix-map={sysconfig.get_paths()['include']}=python", "$)"])
    env["AUTOGRAD_TORCH"] = facts
    return env


def Package(env, package, sources=(), cuda_sources=(), native_functions="native_functions.yaml",
            derivatives="derivatives.yaml", includes=(), python_helpers=None):
    """The package's library, `$BUILD/<package>/_C.so`: the Functions the
    tool generates from the two yaml files (ops in the namespace
    `<package>::`), the hand-written `sources` and, with a CUDA torch, the
    `.cu` ones.  `python_helpers`: the stable target's own Python helpers
    (a .py file the formulas call; the C++ target's are in `includes`).
    Returns the library node (also the default target)."""
    build = env["BUILD"]
    objects_dir = os.path.join(build, "obj")
    env.VariantDir(objects_dir, "#", duplicate=False)

    def in_build(nodes):  # objects under $BUILD/obj, not beside the sources
        return [env.File(os.path.join(objects_dir, n.srcnode().get_path(env.Dir("#")) if hasattr(n, "srcnode")
                                      else str(n))) for n in env.Flatten([nodes])]

    env = env.Clone()
    env.Append(CPPPATH=["#csrc"])
    own = in_build(sources)
    stable = _stable(env)
    if python_helpers and stable is None:
        _refuse(f"extension.Package({package!r}): python_helpers= names the stable target's Python helpers "
                "(pyproject.toml's [tool.autograd-scons] stable); the C++ target's come from includes=")
    if stable is not None:
        if env.Flatten([cuda_sources]):
            _refuse(f"extension.Package({package!r}): the stable target (pyproject.toml) builds CPU kernels "
                    "here; CUDA sources need the C++ target")
        # the kernels (torch::stable::Tensor) compiled stable; the library's autograd module beside it
        functions = env.AutogradFunctions(os.path.join(build, "gen"), native_functions=native_functions,
                                          derivatives=derivatives, stable=stable, pch_sources=own,
                                          python_helpers=python_helpers)
    else:
        functions = env.AutogradFunctions(os.path.join(build, "gen"), native_functions=native_functions,
                                          derivatives=derivatives, namespace=f"{package}::autograd",
                                          includes=list(includes), unity=env["UNITY"], pch=env["AUTOGRAD_PCH"],
                                          python=env["PYTHON"], pch_sources=own)  # returned among the TUs
    cuda_in_build = in_build(cuda_sources)
    cuda = env.CudaObjects(cuda_in_build)
    # (a stable library links libtorch_cpu alone: the shims live there)
    libs = {} if stable is None else {"LIBS": [x for x in env.get("LIBS", []) if str(x) not in
                                               ("c10", "torch", "torch_python")]}
    library = env.SharedLibrary(os.path.join(build, package, LIBRARY_STEM), functions + cuda,
                                SHLIBPREFIX="", SHLIBSUFFIX=".so", **libs)
    if not S.GetOption("help"):
        # the sources by their own paths: under the variant dir (duplicate=False)
        # record_inputs would see names that are not on disk
        _record_inputs(env, library, [native_functions, derivatives] + [n.srcnode() for n in own + cuda_in_build]
                       + (["#pyproject.toml"] if stable is not None else [])  # (the switch is read there)
                       + ([python_helpers] if python_helpers else []))
    facts = env["AUTOGRAD_TORCH"]
    _write_if_changed(os.path.join(build, WHEEL_JSON), {
        "package": package, "library": f"{package}/{LIBRARY_STEM}.so",
        "python": bool(env["PYTHON"]) and stable is None,   # (a stable library uses no Python C API)
        "stable": stable.version if stable else None,
        "modules": [os.path.relpath(n.abspath, env.Dir(build).abspath).replace(os.sep, "/")
                    for n in library[1:]] if stable else [],   # the autograd module and its support
        "torch": facts["version"], "torch_cuda": facts.get("cuda"),  # the variant's name (ship/variant.py)
        "cuda": env.get("AUTOGRAD_CUDA_ARCHS") or [],
        "cuda_skipped": env.get("AUTOGRAD_CUDA_SKIPPED") if cuda_sources else None,
        "cuda_sources": [str(s) for s in env.Flatten([cuda_sources])]})
    env.Default(library)
    return library


def _stable(env):
    """The project's stable target: pyproject.toml's `[tool.autograd-scons] stable`."""
    from autograd_scons.ship.stable_project import StableConfigError, project_stable
    try:
        return project_stable(env.Dir("#").abspath)
    except StableConfigError as e:
        _refuse(str(e))


def _refuse(message):
    import sys
    sys.stderr.write(f"scons: *** {message}\n")
    S.Exit(2)


def _record_inputs(env, library, files):
    """What the editable install's up-to-date check stats (load()'s
    stamp): the library's inputs, `files` and the SConstruct, and the
    generator's and this package's modules."""
    from autograd_scons.buildenv import up_to_date
    extra = [env.File(p).srcnode().abspath for p in files] + [env.File("#SConstruct").abspath]
    up_to_date.record_inputs(library, os.path.join(env["BUILD"], up_to_date.INPUTS), extra=extra,
                             code_roots=up_to_date.tool_code_roots())


def _write_if_changed(path, data):
    if S.GetOption("no_exec") or S.GetOption("clean"):
        return
    from autograd_scons.codegen.engine.writer import same_bytes, write_atomic
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if not same_bytes(path, text.encode()):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, text.encode())
