"""A SCons CacheDir that checks each entry against a digest before using it.

A plain CacheDir trusts whatever bytes sit under an entry's name: one flipped
bit in a cached object is retrieved, linked, and every later build calls it
up to date.  Here each entry `<cache>/<XX>/<sig>` gets `<sig>.sha256` beside
it, the digest of the built file, written (atomically) before the entry
itself appears.  On retrieval an entry whose bytes do not match, or that has
no digest (a plain CacheDir's or an older version's), is a miss: it is
evicted (unless the cache is read-only or this is a dry run) and the target
is rebuilt and pushed again.  A mismatch is reported in one line.

    from autograd_scons.buildenv import verified_cache
    env.CacheDir(path, verified_cache.VerifiedCacheDir)
    # or: verified_cache.use(env, path)
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading

import SCons.Action
import SCons.CacheDir

__all__ = ["VerifiedCacheDir"]  # (docs/embedding.md)

DIGEST_SUFFIX = ".sha256"
_CHUNK = 1 << 20


def _digest_of(path: str) -> str:
    if os.path.islink(path):  # SCons caches a symlink target as a symlink
        return "sha256-link " + hashlib.sha256(os.readlink(path).encode()).hexdigest()
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return "sha256 " + h.hexdigest()


def _write_atomically(path: str, text: str) -> None:
    from autograd_scons.codegen.engine.writer import write_atomic  # (the one atomic writer)
    write_atomic(path, text.encode())


class VerifiedCacheDir(SCons.CacheDir.CacheDir):
    """CacheDir whose entries are used only when they match their digest."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self._lock = threading.Lock()  # retrieve() runs on -j worker threads
        self._told_undigested = False

    # -- pushing: the digest first, so an entry never appears without one

    def push(self, node):
        if self.is_readonly() or not self.is_enabled() or node.nocache:
            return None
        cachedir, cachefile = self.cachepath(node)
        if os.path.lexists(cachefile):
            return super().push(node)  # a no-op: SCons keeps an existing entry
        try:
            os.makedirs(cachedir, exist_ok=True)
            _write_atomically(cachefile + DIGEST_SUFFIX, _digest_of(node.get_internal_path()) + "\n")
        except OSError as e:
            # Not pushing is always safe; SCons warns the same way when it
            # cannot store an entry.
            self._say(f"cannot store a digest for {node} in the cache ({e.strerror}); not cached")
            return None
        return super().push(node)

    # -- retrieving: verify, or treat as a miss

    def retrieve(self, node) -> bool:
        if not self.is_enabled():
            return False
        _, cachefile = self.cachepath(node)
        if not os.path.lexists(cachefile):
            return super().retrieve(node)  # an ordinary miss, counted by SCons
        problem = self._problem(cachefile)
        if problem is None:
            return super().retrieve(node)
        self.requests += 1  # a miss, for --cache-debug's statistics
        # -n must not change anything; --cache-readonly must not change the cache.
        evict = SCons.Action.execute_actions and not self.is_readonly()
        if evict:
            for p in (cachefile, cachefile + DIGEST_SUFFIX):
                try:
                    os.remove(p)
                except FileNotFoundError:
                    pass
                except OSError:
                    evict = False
        self.CacheDebug("CacheRetrieve(%s):  %s is " + problem + "\n", node, cachefile)
        if problem == "undigested":
            self._say_undigested(node, cachefile)
        else:
            done = "evicted, rebuilding" if evict else "left in place, rebuilding"
            self._say(f"cache entry {cachefile} for {node} is corrupt ({problem}); {done}")
        return False

    def _problem(self, cachefile: str):
        """None if the entry matches its digest, else why not."""
        try:
            with open(cachefile + DIGEST_SUFFIX) as f:
                expected = f.read().strip()
        except FileNotFoundError:
            return "undigested"
        except (OSError, UnicodeDecodeError):
            return "unreadable digest"
        try:
            actual = _digest_of(cachefile)
        except OSError:
            return "unreadable entry"
        return None if actual == expected else "digest mismatch"

    def _say_undigested(self, node, cachefile: str) -> None:
        # A cache filled before digests existed holds many such entries: say so once.
        with self._lock:
            if self._told_undigested:
                return
            self._told_undigested = True
        self._say(f"cache entry {cachefile} for {node} has no digest (stored without "
                  "verification); it and any others like it are treated as misses and rebuilt")

    @staticmethod
    def _say(message: str) -> None:
        # One write of one line: SCons's own warnings add a second, SConstruct-location line.
        sys.stderr.write(f"scons: warning: {message}\n")


def use(env, path):
    """`env.CacheDir(path)`, verified.  Returns the env for chaining."""
    env.CacheDir(path, VerifiedCacheDir)
    return env
