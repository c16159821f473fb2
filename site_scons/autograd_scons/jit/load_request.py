"""One load() or load_inline() call as a frozen request: built once from the
arguments as the user gave them (each checked, one LoadError line naming the
argument), written into the build folder as load_spec.json for the
SConstruct (sconstruct.py), which reads the same request back.

    request = LoadRequest.of("myops", nf_path, derivatives_path, sources, tags=None, ..., cuda="auto")
    request.spec()        # load_spec.json
    request.variables()   # the SCons variables of environment.py
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, fields
from typing import Any, Callable, Optional, TypeVar

from autograd_scons.base.errors import Error, OptionError
from autograd_scons.codegen.engine.functions_request import FunctionsRequest


class LoadError(Error, RuntimeError):
    """Bad arguments, or a library already loaded whose inputs changed (one line)."""


def label(name) -> str:
    return f"load({name})" if isinstance(name, str) else f"load({name!r})"


def words(text, what: str, name: str) -> tuple:
    """A string or a list of strings, as a tuple; else one LoadError."""
    if text is None:
        return ()
    if isinstance(text, str):
        text = [text]
    if not all(isinstance(t, str) for t in text):
        raise LoadError(f"{label(name)}: {what} must be a list of strings")
    return tuple(text)


_SWITCH = {"auto": "auto", True: "1", False: "0"}


@dataclass(frozen=True)
class LoadOptions:
    """The keywords load() and load_inline() share, as the user gave them
    (each checked when the request is built: LoadRequest.of).  Stated once,
    here: both functions take them as `**options` and show them in their
    signature (with_options_signature)."""
    tags: Any = None                 # load(): a tags.yaml path; load_inline(): its text
    includes: Any = ()               # headers the formulas' helpers live in
    namespace: Optional[str] = None  # the classes' C++ namespace (default `<op namespace>::autograd`)
    python: Any = True               # Python bindings (typed grad_fn)
    kernels: Any = True              # the extension ops' Autograd kernels and registrations
    unity: Any = "auto"              # the unity bucket count, or 0 for one TU per unit
    extra_cflags: Any = None
    extra_cuda_cflags: Any = None
    extra_ldflags: Any = None
    extra_include_paths: Any = None
    build_directory: Any = None      # default: $AUTOGRAD_EXTENSIONS_DIR/<name>/<folder key>
    verbose: bool = False            # SCons's output, every command
    cuda: Any = "auto"               # True, False
    pch: Any = "auto"                # the precompiled prelude's policy: True, False
    timeout: Optional[float] = None  # seconds to wait for another process's build of the folder
    cache_dir: Any = None            # an SCons CacheDir (default $AUTOGRAD_CACHEDIR)
    stable: Any = None               # the stable target: the oldest torch ("2.10", True); None: C++
    python_helpers: Any = None       # the stable target's own Python helpers (a .py path), formulas call them

    @classmethod
    def of(cls, function: str, keywords: dict) -> "LoadOptions":
        """The options of a call to `function` (load or load_inline); an
        unknown keyword is Python's TypeError, as for any function."""
        unknown = sorted(set(keywords) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
        return cls(**keywords)


_F = TypeVar("_F", bound=Callable)


def with_options_signature(fn: _F) -> _F:
    """fn(positional..., **options), whose signature (help(), inspect, an
    IDE) shows each LoadOptions keyword with its default in place of
    `**options`."""
    sig = inspect.signature(fn)
    positional = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    keywords = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
                for f in fields(LoadOptions)]
    fn.__signature__ = sig.replace(parameters=positional + keywords)  # type: ignore[attr-defined]
    return fn


@dataclass(frozen=True)
class LoadRequest:
    """What one load() builds and how: the Functions (paths absolute), the
    sources, the flags, CUDA, the object cache, the compiler."""
    name: str
    functions: FunctionsRequest
    sources: tuple = ()
    include_paths: tuple = ()
    extra_cflags: tuple = ()
    extra_cuda_cflags: tuple = ()
    extra_ldflags: tuple = ()
    cuda: str = "auto"             # environment.py's CUDA: auto, 1, 0
    cache_dir: str = ""            # environment.py's CACHEDIR; "" for none
    compiler: str = "g++"

    @classmethod
    def of(cls, name, native_functions, derivatives, sources, tags, options: LoadOptions) -> "LoadRequest":
        """From load()'s arguments (the spec files, tags file and sources
        checked already, as paths) and its options; raises LoadError naming
        the argument."""
        o = options
        if o.cuda not in _SWITCH:
            raise LoadError(f"{label(name)}: cuda must be 'auto', True or False, not {o.cuda!r}")
        try:
            functions = FunctionsRequest.of(native_functions, derivatives, tags=tags, namespace=o.namespace,
                                            includes=words(o.includes, "includes", name), unity=o.unity, pch=o.pch,
                                            kernels=o.kernels, python=o.python, stable=o.stable,
                                            python_helpers=(os.path.abspath(os.fspath(o.python_helpers))
                                                            if o.python_helpers is not None else None))
        except OptionError as e:
            raise LoadError(f"{label(name)}: {e}") from None
        cache_dir = o.cache_dir or os.environ.get("AUTOGRAD_CACHEDIR")
        return cls(name, functions, tuple(sources),
                   tuple(os.path.abspath(p) for p in words(o.extra_include_paths, "extra_include_paths", name)),
                   words(o.extra_cflags, "extra_cflags", name), words(o.extra_cuda_cflags, "extra_cuda_cflags", name),
                   words(o.extra_ldflags, "extra_ldflags", name), _SWITCH[o.cuda],
                   os.path.abspath(cache_dir) if cache_dir else "", os.environ.get("CXX") or "g++")

    def spec(self) -> dict:
        """load_spec.json's content (from_spec reads it back)."""
        return {"name": self.name, "functions": self.functions.to_json(), "sources": list(self.sources),
                "include_paths": list(self.include_paths), "extra_cflags": list(self.extra_cflags),
                "extra_cuda_cflags": list(self.extra_cuda_cflags), "extra_ldflags": list(self.extra_ldflags),
                "cuda": self.cuda, "cache_dir": self.cache_dir, "compiler": self.compiler}

    @classmethod
    def from_spec(cls, data: dict) -> "LoadRequest":
        data = dict(data)
        functions = FunctionsRequest.from_json(data.pop("functions"))
        rest: dict = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(functions=functions, **rest)

    def variables(self) -> dict:
        """environment.py's variables for this request (scons -h names them):
        the build sees what `scons` with the same settings sees."""
        f = self.functions
        return {"BUILD": ".", "CXX": self.compiler, "CUDA": self.cuda, "PCH": f.pch.value,
                "PYTHON": "1" if f.emit.python else "0",
                "UNITY": "auto" if f.unity is None else str(f.unity), "CACHEDIR": self.cache_dir}

    @property
    def native_functions(self) -> Optional[str]:
        return self.functions.native_functions
