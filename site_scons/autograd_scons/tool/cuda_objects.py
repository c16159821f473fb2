"""SCons tool: `.cu` sources compiled by nvcc into shared objects.

    env.Tool('nvcc', toolpath=['<this repo>/site_scons/site_tools'])
    cuda_flags.configure(env, torch_flags.configure(env, 'build/.torch.json'))
    objs = env.CudaObjects(env.Glob('csrc/*.cu'))   # [] when the CUDA kernels are left out
    env.SharedLibrary('ext', cpps + objs)

SCons ships no nvcc tool.  This one adds `.cu` to the shared-object
builder (so `env.SharedObject('k.cu')` and `.cu` sources of
`SharedLibrary` work too), with the C scanner, so that an edited header
recompiles the `.cu` files that include it.  The command is `$SHNVCCCOM`:

    $NVCC -o $TARGET -c $SHNVCCFLAGS $NVCCFLAGS $NVCC_ARCHFLAGS $NVCC_TORCHFLAGS
          -ccbin $NVCC_CCBIN $_CCCOMCOM $NVCC_INCFLAGS $SOURCES

`cuda_flags.configure` fills NVCC*, from the installed torch.  $NVCC's
path is out of the signature (nvcc's version is in NVCC_TORCHFLAGS), as are
torch's include folders; the architectures, every flag and the defines are
in it, so changing TORCH_CUDA_ARCH_LIST recompiles the `.cu` objects only.
The host compiler ($NVCC_CCBIN, i.e. $CXX) is a dependency, as the C++ TUs'
compiler is.  `$AUTOGRAD_LAUNCHER` (ccache, sccache) goes before nvcc as
before the C++ compiles, out of the signature, and `compilation_db` (when
loaded) lists the `.cu` compiles.
"""

import shlex
import sys

import SCons.Action
import SCons.Defaults
import SCons.Script
import SCons.Tool

SUFFIX = ".cu"
_COM = ("$( $NVCC $) -o $TARGET -c $SHNVCCFLAGS $NVCCFLAGS $NVCC_ARCHFLAGS $NVCC_TORCHFLAGS "
        "-ccbin $NVCC_CCBIN $_CCCOMCOM $NVCC_INCFLAGS $SOURCES")


def _compilation_db_entries():
    """compilation_db's list of (target, source, env, action), when loaded."""
    module = sys.modules.get("SCons.Tool.compilation_db")
    return getattr(module, "__COMPILATION_DB_ENTRIES", None) if module else None


def _emit(target, source, env):
    target, source = SCons.Defaults.SharedObjectEmitter(target, source, env)
    words = shlex.split(env.subst("$NVCC_CCBIN"))
    host = env.WhereIs(words[0]) if words else None
    if host:  # nvcc runs it: its bytes matter as g++'s do for the C++ TUs
        env.Depends(target, env.File(host))
    entries = _compilation_db_entries()
    if entries is not None and "CompilationDatabase" in env["BUILDERS"]:
        entries.append((target[0], source[0], env, SCons.Action.Action("$SHNVCCCOM")))
    return target, source


def CudaObjects(env, sources):
    """Shared objects of the `.cu` `sources`, or [] (said in one line) when
    cuda_flags.configure left the CUDA kernels out."""
    sources = env.Flatten([sources])
    if not sources:
        return []
    if not env.get("NVCC"):
        reason = env.get("AUTOGRAD_CUDA_SKIPPED") or "nvcc not configured (cuda_flags.configure was not called)"
        top = env.Dir("#")
        names = ", ".join(getattr(s, "srcnode", lambda: s)().get_path(top) if hasattr(s, "get_path") else str(s)
                          for s in sources)
        print(f"scons: CUDA kernels skipped ({reason}): {names} not compiled, "
              "their dispatch: CUDA: registrations left out", flush=True)
        return []
    return env.SharedObject(sources)


def generate(env):
    _, shared_obj = SCons.Tool.createObjBuilders(env)
    shared_obj.add_action(SUFFIX, SCons.Action.Action("$( $AUTOGRAD_LAUNCHER $) $SHNVCCCOM", "$SHNVCCCOMSTR"))
    shared_obj.add_emitter(SUFFIX, _emit)
    SCons.Tool.SourceFileScanner.add_scanner(SUFFIX, SCons.Tool.CScanner)
    env.SetDefault(NVCC="", NVCC_CCBIN="$CXX", SHNVCCFLAGS=["-Xcompiler", "-fPIC"], NVCCFLAGS=[],
                   NVCC_ARCHFLAGS=[], NVCC_TORCHFLAGS=[], NVCC_INCFLAGS=[], SHNVCCCOM=_COM,
                   SHNVCCCOMSTR="", AUTOGRAD_LAUNCHER="")
    env.AddMethod(CudaObjects, "CudaObjects")


def exists(env):
    return True
