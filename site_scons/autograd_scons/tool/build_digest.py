"""The library's digest for torch.compile's caches, written when it builds.

A library adds a digest to torch.compile's cache key tag as it loads
(codegen/emit/cache_key.py): a compiled graph traced through one build's
formulas is never served to another's.  The generator alone can digest only
what it generates; a backward formula that calls a helper of an `includes=`
header, or an op whose kernel the user wrote, compiles into a graph that
the generated text does not determine.  So under SCons the tool writes the
generated folder's `cache_key.cpp` itself, after every other object of the
library is built, from:

- the generated code's digest (emit/cache_key.py, from the update's
  result or its manifest): the units' text wherever the compile layout put
  it, so an edit undone gives the first build's digest again although the
  unit now compiles in an edit TU;
- the content of every other file those objects were compiled from: the
  hand-written sources and every header SCons's scanner found for them
  (the `includes=` headers, the extension's own headers), each by its
  content alone, so the same code built in another folder gives the same
  digest and the caches hit;
- the compile and link flags and defines (not the include and library
  paths: what they lead to is in the headers' contents);
- the compiler's files (its driver's content, not its path).

The action runs when an object of the library, a flag or the compiler
changed; an unchanged digest leaves the file's bytes, and so its object,
as they were.
"""

from __future__ import annotations

import os
import shlex

import SCons.Action
import SCons.Node.FS
import SCons.Scanner
import xxhash

from autograd_scons.codegen.emit.cache_key import cache_key_source
from autograd_scons.codegen.tree import TUKind

# The variables whose values are part of the digest (the action's signature too).
FLAGS = ["CXXFLAGS", "CCFLAGS", "SHCCFLAGS", "SHCXXFLAGS", "CPPDEFINES", "LINKFLAGS", "SHLINKFLAGS", "LIBS"]
# generated folder -> its cache_key.cpp node
_DECLARED: dict = {}


def declare(env, out, nodes, result, objects) -> None:
    """Make the generated folder `out`'s cache_key.cpp (among `nodes`, the
    TUs of `result`) a target built from `objects` (the folder's objects)."""
    if result is None:
        return
    cpp = next((n for n, t in zip(nodes, result.tus) if t.kind is TUKind.CACHE_KEY), None)
    if cpp is None:
        return
    others = [o for o in objects if not _made_from(o, cpp)]
    env.Command(cpp, others, SCons.Action.Action(_write, "$AUTOGRAD_DIGESTCOMSTR",
                                                 varlist=FLAGS + ["CXX", "AUTOGRAD_CODE_DIGEST"]),
                target_scanner=_INPUTS, AUTOGRAD_CODE_DIGEST=result.code_digest)
    env.NoCache(cpp)   # (a one-line file, written in no time: CacheDir keeps the objects)
    compiler = _compiler_files(env)
    if compiler:
        env.Depends(cpp, compiler)
    _DECLARED[out.abspath] = cpp


def with_library(env, sources) -> None:
    """For a library linked from `sources` (nodes) that holds objects of a
    generated folder: that folder's digest covers every other object of it
    (the hand-written kernels' too)."""
    paths = [str(getattr(s, "abspath", s)) for s in sources]
    for folder, cpp in _DECLARED.items():
        if any(p.startswith(folder + os.sep) for p in paths):
            env.Depends(cpp, [s for s in sources if not _made_from(s, cpp)])


def _made_from(node, cpp) -> bool:
    """`node` is cache_key.cpp, or its object (the builders hand out either)."""
    return node is cpp or cpp in getattr(node, "sources", ())


def _compiler_files(env) -> list:
    """The files the compiler command names (`g++`; `sh wrapper.sh`)."""
    found = []
    for word in shlex.split(env.subst("$CXX")):
        path = word if os.path.isfile(word) else env.WhereIs(word)
        if path:
            found.append(env.File(os.path.realpath(path)))
    return found


def _write(target, source, env) -> int:
    digest = library_digest(target[0], env)
    text = cache_key_source(digest)
    path = target[0].get_abspath()
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return 0


def _scan_inputs(node, env, path) -> list:
    """The digest's own dependencies: the files its objects were compiled
    from, so that a header whose edit leaves every object's bytes as they
    were (a comment) still writes the digest again."""
    return [f for o in list(node.sources) + list(node.depends) for f in _below(o)]


def _below(node) -> list:
    return source_files(node) if node.has_builder() else [node]


_INPUTS = SCons.Scanner.Base(_scan_inputs, name="autograd_digest_inputs")


def source_files(node) -> list:
    """Every file below `node` that SCons does not build: the sources,
    generated or hand-written, the headers its scanner found for them, and
    the tools a command depends on; through every derived file (an object, a
    precompiled prelude, a weakened copy) to what it was made from."""
    found = []
    seen: set = set()
    stack = list(node.children())
    while stack:
        n = stack.pop()
        if id(n) in seen or not isinstance(n, SCons.Node.FS.File):
            continue
        seen.add(id(n))
        if n.has_builder():
            stack.extend(n.children())
        else:
            found.append(n)
    return found


def library_digest(node, env) -> str:
    """The digest of cache_key.cpp `node`'s inputs: the generated code's
    digest for its folder's files, every other file (source_files) by
    content, then the flags."""
    folder = node.dir.get_abspath() + os.sep
    csigs = sorted(n.get_csig() for n in source_files(node) if not n.get_abspath().startswith(folder))
    flags = "\n".join(f"{k}={env.subst('$' + k)}" for k in FLAGS)
    code = env.subst("$AUTOGRAD_CODE_DIGEST")
    return xxhash.xxh3_128_hexdigest("\n".join([code] + csigs + [flags]).encode())
