"""nvcc flags for a torch extension's `.cu` sources, from the installed torch,
derived as `torch.utils.cpp_extension` derives them, and the decision
whether the CUDA kernels are built at all.

`configure(env, facts)` (facts: torch_flags.torch_facts) either sets up the
nvcc tool's variables (site_tools/nvcc.py) or, for a CPU-only torch or
`CUDA=0`, leaves the CUDA kernels out: it then defines
`AUTOGRAD_EXT_WITHOUT_CUDA_KERNELS` for every C++ TU, which the generated
op registrations (codegen/emit/op_kernels/registration.py) read to leave out their
`dispatch: CUDA:` registrations, so that no kernel is left undefined.  A
build that needs nvcc and cannot use it is one `CudaConfigError` line.
"""

import os
import re
import shutil
import subprocess

from autograd_scons.base.errors import Error
from autograd_scons.buildenv import torch_flags

WITHOUT_CUDA_DEFINE = "AUTOGRAD_EXT_WITHOUT_CUDA_KERNELS"

# cpp_extension's COMMON_NVCC_FLAGS: torch's headers define their own half
# and bfloat16 operators, which CUDA's would clash with.
COMMON_NVCC_FLAGS = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                     "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                     "--expt-relaxed-constexpr"]

# The names TORCH_CUDA_ARCH_LIST accepts for architecture families (the
# list cpp_extension and torch's CMake accept); combined names first, since
# they are replaced as substrings.
NAMED_ARCHES = [("Kepler+Tesla", "3.7"), ("Kepler", "3.5+PTX"), ("Maxwell+Tegra", "5.3"),
                ("Maxwell", "5.0;5.2+PTX"), ("Pascal", "6.0;6.1+PTX"), ("Volta+Tegra", "7.2"),
                ("Volta", "7.0+PTX"), ("Turing", "7.5+PTX"), ("Ampere+Tegra", "8.7"),
                ("Ampere", "8.0;8.6+PTX"), ("Ada", "8.9+PTX"), ("Hopper", "9.0+PTX"),
                ("Blackwell+Tegra", "11.0"), ("Blackwell", "10.0;10.3;12.0;12.1+PTX"), ("Rubin", "10.7+PTX")]
# `9.0`, `9.0a` (arch-specific), `10.0f` (family), each optionally `+PTX`.
_ARCH = re.compile(r"(\d+)\.(\d)([af]?)(\+PTX)?")
_SM = re.compile(r"sm_(\d+)(\d)([af]?)")
# Where cpp_extension looks for the toolkit when CUDA_HOME, CUDA_PATH and PATH have none.
DEFAULT_CUDA_HOME = "/usr/local/cuda"


class CudaConfigError(Error, ValueError):
    """A build that must compile CUDA and cannot: one line for `scons: ***`."""


def arch_list(text, facts):
    """TORCH_CUDA_ARCH_LIST (`"8.0;9.0+PTX"`, `"8.0 8.6"`, `"Ampere"`, ...)
    as a list like ['8.0', '9.0+PTX'].  Unset (or `native`): the visible
    GPUs' architectures, the newest with PTX, as cpp_extension does; with no
    GPU visible, the oldest architecture torch was built for, with PTX (runs
    on every GPU torch supports, newer ones through the driver's PTX JIT)."""
    text = (text or "").strip()
    if not text or text == "native":
        gpus = sorted(set(facts.get("gpus") or []), key=_arch_key)
        if gpus:
            return gpus[:-1] + [gpus[-1] + "+PTX"]
        return [default_arch(facts) + "+PTX"]
    expanded = text.replace(" ", ";")
    for name, arches in NAMED_ARCHES:
        expanded = expanded.replace(name, arches)
    archs = [a for a in expanded.split(";") if a]
    for a in archs:
        if not _ARCH.fullmatch(a):
            raise CudaConfigError(f"TORCH_CUDA_ARCH_LIST={text!r}: {a!r} is not a CUDA architecture "
                                  "(e.g. '8.0', '9.0a', '9.0+PTX', 'Ampere'; ';' or ' ' between them)")
    if not archs:
        raise CudaConfigError(f"TORCH_CUDA_ARCH_LIST={text!r} names no CUDA architecture")
    return list(dict.fromkeys(archs))


def _arch_key(arch):
    m = _ARCH.fullmatch(arch)
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else (0, 0, arch)


def default_arch(facts):
    """The oldest `sm_XY` of torch's own build (torch._C._cuda_getArchFlags)."""
    found = [f"{m.group(1)}.{m.group(2)}" for m in map(_SM.fullmatch, facts.get("cuda_arches") or []) if m]
    return min(found, key=_arch_key) if found else "8.0"


def gencode_flags(archs):
    """`-gencode` per architecture: the SASS for it, and for `+PTX` the
    PTX too (as cpp_extension writes them)."""
    flags = []
    for a in archs:
        major, minor, suffix, ptx = _ARCH.fullmatch(a).groups()
        num = f"{major}{minor}{suffix}"
        flags.append(f"-gencode=arch=compute_{num},code=sm_{num}")
        if ptx:
            flags.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    return flags


def find_nvcc(environ):
    """nvcc, found as cpp_extension finds the toolkit: $CUDA_HOME or
    $CUDA_PATH, then PATH, then /usr/local/cuda.  None when not found."""
    home = environ.get("CUDA_HOME") or environ.get("CUDA_PATH")
    if home:
        candidates = [os.path.join(home, "bin", "nvcc")]
    else:
        candidates = [shutil.which("nvcc", path=environ.get("PATH", "")),
                      os.path.join(DEFAULT_CUDA_HOME, "bin", "nvcc")]
    return next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


def nvcc_identity(nvcc):
    """{'release': '13.0', 'id': 'V13.0.88_cuda_13.0.r13.0_compiler.36424714_0',
    'top': toolkit folder or None} from `nvcc --version` and `--dryrun`."""
    out = _run(nvcc, ["--version"])
    m = re.search(r"release (\d+\.\d+), (V[\w.]+)", out.stdout)
    if out.returncode != 0 or not m:
        raise CudaConfigError(f"nvcc {nvcc}: `nvcc --version` (exit {out.returncode}) does not say its release")
    build = re.search(r"^Build (\S+)", out.stdout, re.M)
    ident = re.sub(r"[^\w.]", "_", m.group(2) + (f"_{build.group(1)}" if build else ""))
    # The real toolkit folder (nvcc on PATH may be a wrapper script, e.g.
    # /usr/local/bin/nvcc): nvcc's dry run names it as TOP.
    dry = _run(nvcc, ["--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull])
    top = re.search(r"^#\$ TOP=(.+)$", dry.stderr + dry.stdout, re.M)
    return {"release": m.group(1), "id": ident, "top": os.path.normpath(top.group(1)) if top else None}


def _run(nvcc, args):
    try:
        return subprocess.run([nvcc, *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CudaConfigError(f"nvcc {nvcc}: `nvcc {args[0]}` failed: {getattr(e, 'strerror', None) or e}") from None


def _cudart_dir(home, top):
    for base in dict.fromkeys(b for b in (home, top) if b):
        for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
            d = os.path.join(base, sub)
            if os.path.exists(os.path.join(d, "libcudart.so")):
                return d
    return None


def _wheel_includes(facts):
    """The CUDA library headers ATen's CUDA headers include (cusparse.h,
    cublas_v2.h, ...), which torch's nvidia-* wheels install next to torch
    (`nvidia/cu13/include`; one folder per library in CUDA 12's wheels)."""
    nvidia = os.path.join(os.path.dirname(facts["root"]), "nvidia")
    try:
        names = sorted(os.listdir(nvidia))
    except OSError:
        return []
    return [p for p in (os.path.join(nvidia, n, "include") for n in names) if os.path.isdir(p)]


def configure(env, facts, mode="auto", arch_text=None, environ=None):
    """Set up nvcc for the `.cu` sources, or leave them out.  `mode`:
    'auto' (build them with a CUDA torch), '1' (must), '0' (never).
    Returns None when they are built, else why not (one phrase)."""
    environ = os.environ if environ is None else environ
    torch = f"torch {facts['version']}"
    reason = None
    if mode == "0":
        reason = "CUDA=0"
    elif not facts.get("cuda"):
        if mode == "1":
            raise CudaConfigError(f"CUDA=1, but {torch} is a CPU-only build (torch.version.cuda is None): "
                                  "install a CUDA build of torch, or build without the CUDA kernels (CUDA=auto)")
        reason = f"{torch} is a CPU-only build"
    if reason:
        env.AppendUnique(CPPDEFINES=[WITHOUT_CUDA_DEFINE])
        env["AUTOGRAD_CUDA_SKIPPED"] = reason
        return reason
    nvcc = find_nvcc(environ)
    major = facts["cuda"].split(".")[0]
    if nvcc is None:
        where = "$CUDA_HOME/bin" if environ.get("CUDA_HOME") else "$CUDA_PATH/bin" if environ.get("CUDA_PATH") \
            else f"PATH and {DEFAULT_CUDA_HOME}/bin"
        raise CudaConfigError(f"{torch} is a CUDA {facts['cuda']} build, but no nvcc was found (looked in {where}): "
                              f"install the CUDA {major} toolkit, set CUDA_HOME to it, or build without the "
                              "CUDA kernels (CUDA=0)")
    ident = nvcc_identity(nvcc)
    if ident["release"].split(".")[0] != major:
        raise CudaConfigError(f"nvcc {nvcc} is CUDA {ident['release']}, but {torch} was built with CUDA "
                              f"{facts['cuda']}: their major versions must match (set CUDA_HOME to a CUDA {major} "
                              "toolkit, or build without the CUDA kernels: CUDA=0)")
    archs = arch_list(arch_text if arch_text is not None else environ.get("TORCH_CUDA_ARCH_LIST"), facts)
    std = [f for f in env.get("CXXFLAGS", []) if str(f).startswith("-std=")]  # the C++ TUs' standard
    env.Replace(NVCC=nvcc, NVCC_CCBIN="$CXX", AUTOGRAD_CUDA_ARCHS=archs,
                NVCC_ARCHFLAGS=gencode_flags(archs),
                # nvcc's identity is signed, its path is not (a CacheDir stays shareable).
                NVCC_TORCHFLAGS=COMMON_NVCC_FLAGS + std + [f"-DAUTOGRAD_EXT_NVCC={ident['id']}"],
                NVCC_INCFLAGS=torch_flags.unsigned_includes(torch_flags.include_dirs(facts) + _wheel_includes(facts)))
    libdir = _cudart_dir(environ.get("CUDA_HOME") or environ.get("CUDA_PATH"), ident["top"])
    if libdir:
        env.Append(LINKFLAGS=["$(", f"-L{libdir}", "$)"])
    # What CUDAExtension links besides the C++ libraries.
    env.Append(LIBS=["cudart", "c10_cuda", "torch_cuda"])
    return None
