"""`cache_key.cpp`: torch.compile's caches see a rebuilt library.

AOTAutogradCache and inductor's FX graph cache key a compiled graph by its
FX graph and torch's config, and take every operator as cacheable by its
name: the C++ behind one of ours is in no key.  After a formula edit a
fresh process would be served the backward traced through the old formula
(the old gradient, exit status 0).  Every one of torch's compile caches
also keys by `torch.compiler.config.cache_key_tag`: when a library loads,
it adds the digest of what it was built from to that tag
(templates/cache_tag.cpp, defined in support.cpp), whichever way it is
loaded (`torch.ops.load_library`, load(), a wheel's package), and adds
nothing in a process without Python.

The digest of the generated code is of the text of every generated file
the library is compiled from but
the unity files (an arrangement of the units' text: the same code in
another layout is the same library), `derivative_lines.h` (yaml paths and
line numbers, which only debug information sees) and this file: so an
edit undone, or the same specs built in another folder, give the same
digest again and the caches hit.  It has a file of its own, a TU with no
header, so that an edit recompiles that trivial TU besides its own, never
support.cpp, whose text depends on the options only.  Generated alone
(`python -m autograd_scons generate`), the library's digest is that one.
Built by the SCons tool (`scons`, load(), the backend), it is the tool's,
written at build time from that one and every other source and header of
the library as SCons's scanner finds them (the `includes=` headers and the
hand-written kernels, which a formula's backward may call), the flags and
the compiler (site_scons/autograd_scons/tool/build_digest.py).  A patch of
libtorch's Functions (EmitOptions.patch) has neither.
"""

from __future__ import annotations

from typing import Iterable

import xxhash

from ..templates import load
from ..tree import BANNER, CACHE_KEY_CPP, LINES_H, UNITY
from .options import EmitOptions

# Before each library's digest in the tag: what a library recognises as
# another library's part of the tag, never the user's.
TOKEN_PREFIX = "autograd_functions:"
TAG_VARIABLE = "TORCH_COMPILE_CACHE_KEY_TAG"   # torch reads the tag from it, on import


def digested(rel: str) -> bool:
    """Whether the generated file `rel` is part of the library's digest."""
    return not rel.startswith(UNITY + "/") and rel not in (CACHE_KEY_CPP, LINES_H)


def file_digest(text: bytes) -> str:
    """One generated file's part of the library's digest."""
    return xxhash.xxh3_128_hexdigest(text)


def library_digest(files: Iterable[tuple[str, str]]) -> str:
    """The digest of (relpath, file_digest) pairs, in any order."""
    lines = sorted(f"{rel} {d}\n" for rel, d in files if digested(rel))
    return xxhash.xxh3_128_hexdigest("".join(lines).encode())


def cache_key_source(digest: str) -> str:
    """cache_key.cpp holding `digest` (the SCons tool writes it with its own
    digest of every input of the library: tool/build_digest.py)."""
    return load("cache_key.cpp").substitute(banner=BANNER, digest=digest)


def cache_tag_definitions(opts: EmitOptions) -> list[str]:
    """support.cpp's code that adds the digest to the tag on load."""
    if opts.patch:
        return []
    return load("cache_tag.cpp").lines(prefix=TOKEN_PREFIX, variable=TAG_VARIABLE)
