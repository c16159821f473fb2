"""Deciding "up to date" without SCons: the stamp of a build started from
Python (`load()`, the editable install), one format for both.

The SConstruct side names what the stamp must cover:

    stamp.record_inputs(lib, os.path.join(folder, stamp.INPUTS), extra=[yaml, ...])

which, when the build succeeds, writes every file the targets depended on
(sources, the headers SCons's scanner found, the compiler, the generated
files), each with its fingerprint (codegen.engine.writer.stat_of) and the digest
SCons built it from, plus `extra` (files read while the SConscripts were
read: the specs) and the Python modules of the generator and tool.  After
the build, `write_stamp(path, key, inputs, outputs=[library])` adds the
outputs' fingerprints and digests.  `up_to_date` then needs one stat per
file and a digest only of those whose stat moved: no SCons, no subprocess.
`key` is any JSON value standing for everything else (flags, versions).
"""

from __future__ import annotations

import json
import os
import sys

from autograd_scons.codegen.engine.writer import stat_of

INPUTS = ".build_inputs.json"  # written by record_inputs (the SCons side)


def _digest(path: str, algorithm: str) -> str:
    import hashlib
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stat(path: str, strict: bool = False) -> list:
    found = stat_of(path, strict)
    if found is None:
        raise FileNotFoundError(2, "No such file or directory", path)
    return found


def _read_stamp(stamp_path: str):
    """The stamp's JSON, or None when it is missing or damaged in any way
    (a folder, a link, deep nesting, not JSON): a damaged stamp is a rebuild."""
    try:
        fd = os.open(stamp_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd) as f:
            stamp = json.load(f)
        if not isinstance(stamp, dict) or not isinstance(stamp.get("algorithm"), str):
            return None
        return stamp
    except (OSError, ValueError, RecursionError, UnicodeDecodeError):
        return None


def _still(rows, algorithm, strict=False) -> tuple[bool, bool]:
    """(every file of `rows` has its stat or else its digest, some stat moved);
    the rows of moved files get their new stat."""
    moved = False
    for row in rows:
        path, recorded, digest = row
        st = _stat(path, strict)
        if st != recorded:
            if _digest(path, algorithm) != digest:
                return False, moved
            row[1], moved = st, True
    return True, moved


def up_to_date(stamp_path: str, key) -> bool:
    """The stamp exists, holds `key`, and every input and output it lists
    still has its stat or, where the stat moved, its digest.  Files whose
    stat moved but not their bytes (a touch, a checkout) get their new stat
    recorded, so the next check is stats alone again: call it holding the
    lock."""
    stamp = _read_stamp(stamp_path)
    try:
        if stamp is None or stamp["key"] != json.loads(json.dumps(key)):
            return False
        same, moved = _still(stamp["inputs"], stamp["algorithm"])
        if same:
            same, moved_out = _still(stamp.get("outputs", []), stamp["algorithm"], strict=True)
            moved = moved or moved_out
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False
    if not same:
        return False
    if moved:
        try:
            write_json(stamp_path, stamp)
        except OSError:
            pass
    return True


def outputs_differ(stamp_path: str) -> list[str]:
    """The outputs a readable stamp lists whose bytes are no longer the ones
    it recorded (replaced, truncated, swapped): not built by this build."""
    stamp = _read_stamp(stamp_path)
    differ = []
    try:
        for path, recorded, digest in (stamp or {}).get("outputs", []):
            try:
                if _stat(path, True) != recorded and _digest(path, stamp["algorithm"]) != digest:
                    differ.append(path)
            except FileNotFoundError:
                continue
    except (OSError, ValueError, TypeError):
        return differ
    return differ


def clear_stamp(stamp_path: str) -> None:
    try:
        os.unlink(stamp_path)
    except FileNotFoundError:
        pass
    except IsADirectoryError:  # (a folder in its place: a rebuild, not an error)
        import shutil
        shutil.rmtree(stamp_path)


def write_json(path: str, value) -> None:
    """`path` replaced by `value` as JSON, never half-written: a temporary
    file (owner-only, not through a link), renamed over it; the temporary
    is removed when the write fails (a full disk)."""
    write_bytes(path, json.dumps(value).encode())


def write_bytes(path: str, data: bytes, mode: int = 0o600) -> None:
    from autograd_scons.codegen.engine.writer import write_atomic  # (the generator beside this package)
    write_atomic(path, data, mode)


def write_stamp(stamp_path: str, key, inputs_path: str, outputs=()) -> None:
    """After a successful build: `key`, the inputs record_inputs wrote, and
    the `outputs` as they are now (stat and digest)."""
    with open(inputs_path) as f:
        recorded = json.load(f)
    algorithm = recorded["algorithm"]
    rows = [[os.path.abspath(p), _stat(p, True), _digest(p, algorithm)] for p in outputs]
    write_json(stamp_path, dict(recorded, key=key, outputs=rows))


def tool_code_roots() -> list[str]:
    """The folders of the tool's and the generator's modules, as
    `record_inputs` takes them: this package's (the generator inside it)."""
    return [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]


def record_inputs(targets, inputs_path: str, extra=(), code_roots=()) -> None:
    """SCons side (call in the SConstruct, after declaring `targets`): when
    the build succeeds, write every file the targets depend on to
    `inputs_path`, for `up_to_date`.  `extra`: files read while reading the
    SConscripts; `code_roots`: folders whose loaded Python modules count
    (the generator's).  Each file is stat-ed and hashed now, and again at
    the end: one edited during the build is recorded as changed."""
    import atexit

    import SCons.Script
    import SCons.Util
    algorithm = SCons.Util.get_current_hash_algorithm_used()
    roots = tuple(os.path.abspath(r) + os.sep for r in code_roots)
    loaded = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    code = sorted({os.path.abspath(p) for p in loaded if p and os.path.abspath(p).startswith(roots)})
    early = {}
    for path in [os.path.abspath(str(p)) for p in extra] + code:
        if os.path.isfile(path):
            early[path] = (_stat(path), _digest(path, algorithm))

    def leaves():
        seen, stack, files = set(), list(SCons.Util.flatten(targets)), {}
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            children = node.children()
            stack.extend(children)
            if not node.has_builder() and isinstance(node, SCons.Node.FS.File):
                # A source under a VariantDir(duplicate=False) is read from
                # its source folder: record that file, not the variant path
                # (which never exists), or an edit to it would go unseen.
                real = node if node.exists() else node.srcnode()
                if real.exists():
                    files[real.abspath] = real.get_csig()
        return files

    def write():
        if SCons.Script.GetBuildFailures() or SCons.Script.GetOption("no_exec") \
                or SCons.Script.GetOption("clean"):
            return
        rows = []
        for path, csig in sorted(leaves().items()):
            st = _stat(path)
            # the bytes SCons built from, unless the file moved since
            rows.append([path, st if _digest(path, algorithm) == csig else None, csig])
        for path, (st, digest) in sorted(early.items()):
            rows.append([path, st if _stat(path) == st else None, digest])
        write_json(inputs_path, {"algorithm": algorithm, "inputs": rows})

    atexit.register(write)
