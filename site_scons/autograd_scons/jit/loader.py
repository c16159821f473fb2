"""`load()` and `load_inline()`: build an extension's generated autograd
Functions and its sources from Python, as torch.utils.cpp_extension.load
does, and load it: `from autograd_scons import load, load_inline`.

    ops = load("myops", native_functions="specs/native_functions.yaml",
               derivatives="specs/derivatives.yaml", sources=["specs/csrc/kernels.cpp"],
               extra_include_paths=["specs/include"], includes=["myops/backward_helpers.h"])
    ops.bmul(a, b)                       # torch.ops.myops

The build is the one `scons` runs: jit/sconstruct.py, an SConstruct on the
environment of environment.py, run by runner.run_scons in the build
folder `$AUTOGRAD_EXTENSIONS_DIR` (else `~/.cache/autograd_extensions`)
`/<name>/<python ABI>_torch<version>_<cpu|cuXY>_<compiler>/` (or
`build_directory=`).  In that folder: gen/ (generated C++), src<k>/ and
gen/'s objects, obj/<name>.so (SCons's link), `<name>.so` (the library
loaded: a finished link renamed into place), build.log, the lock and the
stamp.  One lock (lock.BuildLock) is held across the up-to-date
check, generation, compile, link and load; the stamp (buildenv.up_to_date)
lets an unchanged load() in a fresh process skip SCons altogether.

The compiler is $CXX (default g++), $AUTOGRAD_LAUNCHER goes before it,
$AUTOGRAD_CACHEDIR (or cache_dir=) is an SCons CacheDir, MAX_JOBS bounds the
jobs (default: the CPUs this process may use).  A torch.ops library cannot be
loaded twice in one process: a second load() of a name returns the same
namespace when nothing changed, else raises LoadError.
"""

from __future__ import annotations

import hashlib
import json
import keyword
import os
import re
import shlex
import shutil
import sys
import time
from typing import Optional

from autograd_scons.buildenv import runner, up_to_date, torch_flags, unfinished_build
from autograd_scons.base.errors import one_line_errors
from autograd_scons.base.lock import BuildLock, FolderError
from autograd_scons.codegen.parse.native_functions import first_op_namespace
from autograd_scons.buildenv.prelude_folders import extensions_root
from autograd_scons.base.private_folder import ensure as ensure_private
from autograd_scons.buildenv.published import publish as _publish, write_if_changed as _write_if_changed
from autograd_scons.jit.load_request import (LoadError, LoadOptions, LoadRequest, label as _label,
                                        with_options_signature, words as _words)

__all__ = ["LoadError", "load", "load_inline"]

SPEC = "load_spec.json"
STAMP = ".up_to_date.json"
_SCONSTRUCT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sconstruct.py")
_loaded: dict = {}  # name -> _Loaded, for this process


class _Loaded:
    def __init__(self, folder, library, key, digests, namespace):
        self.folder, self.library, self.key = folder, library, key
        self.digests, self.namespace = digests, namespace


MAX_NAME = 100  # it names a folder and `<name>.so.<pid>.tmp`: far below any file system's 255


def _check_name(name) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise LoadError(f"load({name!r}): the name must be a Python identifier (it names the library "
                        "and its build folder)")
    if len(name) > MAX_NAME:
        raise LoadError(f"load({name[:20]}...): the name has {len(name)} characters; at most {MAX_NAME} "
                        "(it names the library and its build folder)")


def _file(path, what: str, name: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise LoadError(f"{_label(name)}: {what} must be a path, not {type(path).__name__}")
    full = os.path.abspath(os.fspath(path))
    if not os.path.isfile(full):
        raise LoadError(f"{_label(name)}: {what} {os.fspath(path)}: no such file")
    return full


def _folder_key() -> str:
    """`<python ABI>_torch<version>_<cpu|cuXY|rocmXY>_<compiler>`: two torch
    versions or builds, Pythons or compilers never share an object."""
    import torch
    version = torch.__version__.split("+")[0]
    build = f"cu{torch.version.cuda.replace('.', '')}" if torch.version.cuda else \
        f"rocm{(torch.version.hip or '').split('-')[0]}" if getattr(torch.version, "hip", None) else "cpu"
    words = shlex.split(os.environ.get("CXX") or "g++") or ["g++"]
    found = shutil.which(words[0])
    tag = hashlib.sha256(json.dumps([words, os.path.realpath(found) if found else None]).encode()).hexdigest()[:8]
    program = re.sub(r"[^A-Za-z0-9+._-]", "_", os.path.basename(words[0]))
    return f"{torch_flags.python_abi()}_torch{version}_{build}_{program}-{tag}"


def _build_folder(name: str, build_directory=None) -> str:
    if build_directory is not None:
        return os.path.abspath(os.fspath(build_directory))
    return os.path.join(extensions_root(), name, _folder_key())


def _root(build_directory) -> str:
    """The folder whose ownership is checked, with every folder below it
    (private_folder): the user's own build_directory=, else the cache's root."""
    return os.path.abspath(os.fspath(build_directory)) if build_directory is not None else extensions_root()


# name -> the stable target's autograd module: its registrations last as long as it does.
_STABLE_AUTOGRAD: dict = {}


def _run_stable_autograd(folder, namespace, specs_folder):
    """Register the stable target's autograd (the generated Python module
    of the build folder, which imports its run-time support beside it),
    once per process, after its library loaded.  The Python modules the
    yaml names (`fake: {python: module.function}`) are found beside
    native_functions.yaml first, as they would be beside a shipped library."""
    import importlib.util
    from autograd_scons.codegen.emit.stable_python import module_name
    from autograd_scons.codegen.engine.stable_update import STABLE_FOLDER
    name = module_name(namespace)
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "gen", STABLE_FOLDER, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, specs_folder)
    try:
        spec.loader.exec_module(module)
    finally:
        if specs_folder in sys.path:
            sys.path.remove(specs_folder)
    return module


def _build_and_load(request, folder, root, verbose, timeout, inline=None):
    name, label = request.name, _label(request.name)
    # The request (PCH with the rest) is in `key`: switching PCH runs SCons,
    # whose signatures (the -include of the prelude is on every command line)
    # then recompile every object built with the other setting.
    spec, variables, jobs = request.spec(), request.variables(), runner.default_jobs()
    import torch
    key = {"spec": spec, "variables": variables, "jobs": jobs, "torch": torch_flags.torch_stamp(os.path.dirname(torch.__file__)),
           "inline": {k: hashlib.sha256(v.encode()).hexdigest() for k, v in (inline or {}).items()},
           "env": {k: os.environ.get(k, "") for k in ("TORCH_CUDA_ARCH_LIST", "CUDA_HOME", "PATH")}}
    key = json.loads(json.dumps(key))
    stamp_path = os.path.join(folder, STAMP)
    library = os.path.join(folder, f"{name}.so")
    before = _loaded.get(name)
    if before is not None:
        return _again(label, before, folder, key, stamp_path, timeout)
    ensure_private(folder, root, label)
    with BuildLock(folder, timeout=timeout, label=label) as lock:
        try:
            _bring_up_to_date(name, folder, spec, inline, key, variables, jobs, verbose, label, lock)
        except FolderError:
            raise
        except OSError as e:  # a full disk, a read-only folder: the path, and nothing half-written
            where = f" {e.filename}" if e.filename else ""
            raise FolderError(e.errno, f"{label}: cannot write{where}: {e.strerror}") from None
        digests = _digests(stamp_path)
        # (read as the generator reads the file, which the build just accepted)
        op_namespace = first_op_namespace(request.native_functions)
        try:
            torch.ops.load_library(library)
        except OSError as e:   # the library's own line (a registration it refused: load_check.h), not torch's
            refused = _refusal(e)
            if refused is not None:
                raise LoadError(f"{label}: {refused}") from None
            raise
        if request.functions.stable is not None:  # the stable target's autograd is Python (gen/stable/)
            _STABLE_AUTOGRAD[name] = _run_stable_autograd(folder, op_namespace,
                                                          os.path.dirname(os.path.abspath(request.native_functions)))
    namespace = getattr(torch.ops, op_namespace)
    _loaded[name] = _Loaded(folder, library, key, digests, namespace)
    return namespace


def _refusal(error: BaseException) -> Optional[str]:
    """The line of a library that refused to load (load_check.h: an
    ImportError raised as dlopen returned), in the chain torch and ctypes
    wrap it in (OSError from SystemError from it), or None."""
    seen = 0
    cause: Optional[BaseException] = error
    while cause is not None and seen < 8:
        if isinstance(cause, ImportError) and str(cause).startswith("autograd_functions: "):
            return str(cause)
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return None


def _bring_up_to_date(name, folder, spec, inline, key, variables, jobs, verbose, label, lock) -> None:
    """Under the lock: the inputs written, then SCons unless the stamp
    vouches for the inputs and for the library's bytes."""
    stamp_path, library = os.path.join(folder, STAMP), os.path.join(folder, f"{name}.so")
    started = time.perf_counter()
    for rel, text in (inline or {}).items():
        path = os.path.join(folder, rel)
        ensure_private(os.path.dirname(path), folder, label)
        _write_if_changed(path, text)
    _write_if_changed(os.path.join(folder, SPEC), json.dumps(spec, indent=1, sort_keys=True))
    if up_to_date.up_to_date(stamp_path, key) and os.path.isfile(library):
        _report_up_to_date(time.perf_counter() - started)
        return
    if up_to_date.outputs_differ(stamp_path):
        # The library is not the one this folder built: nothing in it is
        # taken on trust, SCons checks every target against its database.
        unfinished_build.distrust(os.path.join(folder, unfinished_build.DATABASE))
    up_to_date.clear_stamp(stamp_path)
    launcher = os.environ.get("AUTOGRAD_LAUNCHER", "")
    result = runner.run_scons(_SCONSTRUCT, folder, dict(variables, LAUNCHER=launcher), jobs=jobs,
                                 verbose=verbose, label=label, lock=lock, entry="load")
    _publish(os.path.join(folder, "obj", f"{name}.so"), library)
    # obj/'s link too: a later key change that rebuilds nothing publishes it again
    up_to_date.write_stamp(stamp_path, key, result.inputs_path,
                      outputs=[library, os.path.join(folder, "obj", f"{name}.so")])


def _report_up_to_date(seconds: float) -> None:
    """$AUTOGRAD_REPORT, when set, for a load() that ran no build (the
    stamp vouched for it): status up_to_date (build_report/document.py)."""
    from autograd_scons.build_report import document
    report = document.requested()
    if report is not None:
        document.write_up_to_date(report, "load", seconds)


def _digests(stamp_path: str) -> Optional[list]:
    """(path, digest) of every input in a stamp (not the stats, which a
    touch moves), or None."""
    try:
        with open(stamp_path) as f:
            return [(row[0], row[-1]) for row in json.load(f)["inputs"]]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def _again(label, before, folder, key, stamp_path, timeout):
    """A second load() of a name in this process: the same namespace if
    nothing changed, else one error (the library cannot be loaded again)."""
    same = False
    if folder == before.folder and key == before.key:
        with BuildLock(folder, timeout=timeout, label=label):
            same = up_to_date.up_to_date(stamp_path, key) and _digests(stamp_path) == before.digests
    if same:
        return before.namespace
    what = "its build folder" if folder != before.folder else \
        "its arguments" if key != before.key else "its inputs (sources, specs or headers)"
    raise LoadError(f"{label}: {before.library} is already loaded in this process and {what} changed "
                    "since; torch.ops cannot load a library twice under one name: start a new process "
                    "to build and load the new one")


@with_options_signature
@one_line_errors
def load(name, native_functions, derivatives, sources=(), **options):
    """Build (when needed) and load the extension `name`; return
    `torch.ops.<its op namespace>`.  Raises LoadError (bad arguments),
    runner.BuildError (a failed build: first error, log path),
    lock.LockTimeout, lock.FolderError: each an `autograd_scons.Error`.
    The keywords (tags=, includes=, ..., cache_dir=) are LoadOptions'
    (docs/load.md), shared with load_inline().

    `pch`: the precompiled prelude's policy, as at every entry point
    (docs/compile-layout.md): "auto" (default) for the edit TUs, and for a
    cold build's TUs only where enough of them take it to pay for the
    precompile (GCC and clang alike, each with its own threshold), shared
    per torch, compiler and flags.  True / False: every TU / none."""
    o = LoadOptions.of("load", options)
    _check_name(name)
    request = LoadRequest.of(
        name, _file(native_functions, "native_functions", name), _file(derivatives, "derivatives", name),
        [_file(s, "source", name) for s in _words(sources, "sources", name)],
        _file(o.tags, "tags", name) if o.tags is not None else None, o)
    return _build_and_load(request, _build_folder(name, o.build_directory), _root(o.build_directory), o.verbose,
                           o.timeout)


@with_options_signature
@one_line_errors
def load_inline(name, native_functions, derivatives, cpp_sources=(), cuda_sources=(), **options):
    """load() of texts: the yaml and the sources (a string or a list of
    strings each, joined into inline/main.cpp and inline/cuda.cu) are written
    into the build folder's inline/ only when they changed, so an unchanged
    call is a no-op.  The keywords are load()'s (`tags=`: a text here)."""
    o = LoadOptions.of("load_inline", options)
    _check_name(name)
    texts = {"native_functions.yaml": ("native_functions", native_functions),
             "derivatives.yaml": ("derivatives", derivatives), "tags.yaml": ("tags", o.tags),
             "main.cpp": ("cpp_sources", cpp_sources), "cuda.cu": ("cuda_sources", cuda_sources)}
    inline = {}
    for file, (argument, text) in texts.items():
        several = argument.endswith("sources")
        if text is not None and not isinstance(text, str):
            if not several or not all(isinstance(t, str) for t in text):
                raise LoadError(f"{_label(name)}: {argument} must be a string"
                                + (" or a list of strings" if several else ""))
            text = "\n".join(text)
        if text is not None and (text.strip() or not several):
            inline[f"inline/{file}"] = text
    folder = _build_folder(name, o.build_directory)
    path = lambda file: os.path.join(folder, "inline", file) if f"inline/{file}" in inline else None  # noqa: E731
    request = LoadRequest.of(name, path("native_functions.yaml"), path("derivatives.yaml"),
                             [p for p in (path("main.cpp"), path("cuda.cu")) if p], path("tags.yaml"), o)
    return _build_and_load(request, folder, _root(o.build_directory), o.verbose, o.timeout, inline=inline)
