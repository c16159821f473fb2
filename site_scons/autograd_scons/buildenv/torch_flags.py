"""Compiler and linker flags for a torch extension, from the installed torch.

`import torch` costs seconds, which a no-op build must not pay: torch is located
without importing it, and the few facts that need an import (ABI flag,
version) are asked of a subprocess once and cached in the build folder,
keyed by torch's location and the stat of its version file and core library.
A CPU-only torch is not even imported once: its version is in its version
file and its ABI flag shows in libc10's symbols (read_facts), which saves a
cold build that import's CPU.
"""

import ast
import glob
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig

__all__ = ["configure"]  # (docs/embedding.md; the rest is the build environment's own)

# `cuda`: the CUDA version torch was built with (None for a CPU build);
# `cuda_arches`: the architectures its own kernels were built for (read
# without initialising CUDA); `gpus`: the visible GPUs' compute capabilities
# (cuda_flags.py: the default TORCH_CUDA_ARCH_LIST, as cpp_extension's).
_QUERY = ("import json, torch; c = torch.version.cuda; "
          "print(json.dumps({'abi': int(torch._C._GLIBCXX_USE_CXX11_ABI), 'version': torch.__version__, "
          "'cuda': c, 'cuda_arches': torch._C._cuda_getArchFlags().split() if c else [], "
          "'gpus': ['%d.%d' % torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())] "
          "if c else []}))")


def _torch_dir():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("torch is not installed in the Python running SCons "
                           f"({sys.executable}): pip install -e '.[test]'")
    return list(spec.submodule_search_locations)[0]


def torch_stamp(root):
    """torch's folder and the stat of its version file and core libraries:
    what changes when torch is replaced (in load()'s and the editable
    install's up-to-date keys, and the facts' cache)."""
    files = [os.path.join(root, "version.py")] + sorted(glob.glob(os.path.join(root, "_C*.so")))
    return [root] + [[f, os.stat(f).st_size, os.stat(f).st_mtime_ns] for f in files if os.path.exists(f)]


def torch_facts(cache_path):
    """{'root', 'abi', 'version', 'cuda', 'cuda_arches', 'gpus'} of the
    installed torch, cached (a cache written by another query is asked again)."""
    root = _torch_dir()
    stamp = torch_stamp(root)
    try:
        with open(cache_path) as f:
            cached = json.load(f)
        if cached.get("stamp") == stamp and cached.get("query") == _QUERY:
            return cached["facts"]
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    facts = read_facts(root)
    if facts is None:
        out = subprocess.run([sys.executable, "-c", _QUERY], check=True, capture_output=True, text=True)
        facts = dict(json.loads(out.stdout.strip().splitlines()[-1]), root=root)
    os.makedirs(os.path.dirname(cache_path) or ".", exist_ok=True)
    from autograd_scons.codegen.engine.writer import write_atomic  # (the generator beside this package)
    write_atomic(cache_path, json.dumps({"stamp": stamp, "query": _QUERY, "facts": facts}).encode())
    return facts


def read_facts(root):
    """torch_facts of a CPU-only torch, read from its files; None when
    they cannot tell (a CUDA or ROCm build, whose architectures and GPUs
    need the import, or files not as expected)."""
    try:
        with open(os.path.join(root, "version.py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        with open(os.path.join(root, "lib", "libc10.so"), "rb") as f:
            c10 = f.read()
    except (OSError, SyntaxError, ValueError):
        return None
    values = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and node.value is not None:
            try:
                values[target.id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    version = values.get("__version__")
    if not isinstance(version, str) or values.get("cuda", 0) is not None or values.get("hip", 0) is not None:
        return None
    # With the C++11 ABI, every function returning std::string (libc10 has
    # many) is mangled with the [abi:cxx11] tag; with the old one, none is.
    return {"abi": int(b"B5cxx11" in c10), "version": version, "cuda": None, "cuda_arches": [], "gpus": [],
            "root": root}


def torch_specs():
    """(native_functions.yaml, tags.yaml, derivatives.yaml) shipped with torchgen."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("torchgen (part of torch) is not installed")
    packaged = os.path.join(list(spec.submodule_search_locations)[0], "packaged")
    native = os.path.join(packaged, "ATen", "native")
    return (os.path.join(native, "native_functions.yaml"), os.path.join(native, "tags.yaml"),
            os.path.join(packaged, "autograd", "derivatives.yaml"))


def python_abi():
    """What Python's headers depend on, without their folder: implementation,
    version and ABI flags, e.g. `cpython-311-x86_64-linux-gnu` (`t` after the
    version for a free-threaded build)."""
    soabi = sysconfig.get_config_var("SOABI")
    if soabi:
        return soabi
    # No SOABI (e.g. Windows builds): spell the same facts ourselves.
    version = sysconfig.get_config_var("py_version_nodot") or "".join(map(str, sys.version_info[:2]))
    return f"{sys.implementation.name}-{version}{sysconfig.get_config_var('ABIFLAGS') or ''}"


def include_dirs(facts):
    """torch's and Python's header folders (C++ and CUDA TUs alike)."""
    root = facts["root"]
    return [os.path.join(root, "include"), os.path.join(root, "include", "torch", "csrc", "api", "include"),
            sysconfig.get_paths()["include"]]


def unsigned_includes(dirs):
    """`-isystem` flags inside `$( $)`: see configure."""
    return ["$("] + [x for i in dirs for x in ("-isystem", i)] + ["$)"]


def configure(env, cache_path, python=True):
    """Add torch's headers, libraries and defines to `env`; `python=False`
    leaves out libtorch_python, for a library used from C++ alone (generate
    it with the tool's `python=False`: no Python bindings).

    Include dirs go in as `-isystem` inside `$( $)`: out of the command
    signature (so absolute paths do not defeat a CacheDir shared across
    checkouts) and out of SCons's header scanner (thousands of torch headers
    per TU would dominate a no-op build); likewise torch's libraries are not
    dependencies of the link.  A torch upgrade still recompiles and relinks
    everything: its version is a define, which is in the signature.  So is
    everything else the flags depend on: torch's C++ ABI flag and the
    running Python's version and ABI (whose headers are included), as
    defines without any path.
    """
    facts = torch_facts(cache_path)
    root = facts["root"]
    isystem = unsigned_includes(include_dirs(facts))
    libdir = os.path.join(root, "lib")
    env.Append(
        CXXFLAGS=["-std=c++20"] + isystem,
        CPPDEFINES=[("_GLIBCXX_USE_CXX11_ABI", facts["abi"]),
                    "TORCH_API_INCLUDE_EXTENSION_H",
                    ("AUTOGRAD_EXT_TORCH_VERSION", facts["version"]),
                    ("AUTOGRAD_EXT_PYTHON_ABI", python_abi())],
        # -L outside LIBPATH: SCons would otherwise find libtorch_cpu.so (half
        # a gigabyte) as a dependency of the link and hash it on every build.
        LINKFLAGS=["$(", f"-L{libdir}", "$)"],
        LIBS=["c10", "torch", "torch_cpu"] + (["torch_python"] if python else []),
        RPATH=[libdir],
    )
    # What a precompiled header of torch's headers must be rebuilt for (the
    # autograd_functions tool's pch=True): SCons does not scan torch's
    # headers, so this stands for them: torch's version and the sizes of its
    # version file and core library (no path or mtime: a CacheDir stays
    # shareable between identical installs).
    env["AUTOGRAD_PCH_KEY"] = json.dumps([facts["version"]] + [s[1] for s in torch_stamp(root)[1:]])
    return facts
