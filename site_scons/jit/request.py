"""One load() or load_inline() call as a frozen request: built once from the
arguments as the user gave them (each checked, one LoadError line naming the
argument), written into the build folder as load_spec.json for the
SConstruct (sconstruct.py), which reads the same request back.

    request = LoadRequest.of("myops", nf_path, derivatives_path, sources, tags=None, ..., cuda="auto")
    request.spec()        # load_spec.json
    request.variables()   # the SCons variables of environment.py
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from autograd_scons.codegen.errors import Error
from autograd_scons.codegen.request import FunctionsRequest


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
    def of(cls, name, native_functions, derivatives, sources, *, tags, includes, namespace, python, kernels,
           unity, pch, extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths, cuda,
           cache_dir) -> "LoadRequest":
        """From load()'s arguments (the spec files and sources checked
        already); raises LoadError naming the argument."""
        if cuda not in _SWITCH:
            raise LoadError(f"{label(name)}: cuda must be 'auto', True or False, not {cuda!r}")
        try:
            functions = FunctionsRequest.of(native_functions, derivatives, tags=tags, namespace=namespace,
                                            includes=words(includes, "includes", name), unity=unity, pch=pch,
                                            kernels=kernels, python=python)
        except ValueError as e:
            raise LoadError(f"{label(name)}: {e}") from None
        cache_dir = cache_dir or os.environ.get("AUTOGRAD_CACHEDIR")
        return cls(name, functions, tuple(sources),
                   tuple(os.path.abspath(p) for p in words(extra_include_paths, "extra_include_paths", name)),
                   words(extra_cflags, "extra_cflags", name), words(extra_cuda_cflags, "extra_cuda_cflags", name),
                   words(extra_ldflags, "extra_ldflags", name), _SWITCH[cuda],
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
        return cls(functions=functions, **{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

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
