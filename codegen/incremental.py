"""Incremental generation: per-op cache keys and a crash-safe manifest.

`update()` brings an output folder in line with the specs, doing the least
work: it rewrites only the files of ops whose key changed, deletes the files
of ops that are gone, and, when the input files' bytes, the generator and
the options are those recorded in the manifest, does not even parse YAML.

An op's key hashes everything its generated text can depend on: its
derivatives entry, its matched native function, the semantic content of its
info (which covers tags and derived foreach/view_copy data), the generator's
own source, the emission options, and the op's name, so that a renumbering
(`MulBackward0` becoming `MulBackward1`) regenerates exactly the renamed ops.

Crash safety: all text is rendered in memory before anything is touched; the
manifest is deleted before the first output write and written (atomically)
last, so after a crash or kill the next run finds no manifest, re-renders
everything and rewrites only the files whose bytes differ.  The manifest is
versioned and checksummed; anything wrong with it means "start from
scratch" with a one-line warning, never "trust it".  It also records each
output file's size and mtime, so an output deleted or edited behind our back
is regenerated.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import xxhash

MANIFEST = ".autograd_manifest"
FORMAT = 1
_MAGIC = "autograd-functions-manifest"
# Subfolders whose every file belongs to one op or bucket (by file stem):
# anything else there (removed ops, their objects, temporaries) is pruned.
_OWNED_DIRS = ("functions", "unity", "ops")
# Fields that locate an entry for messages but never reach the generated text
# (tests/test_incremental.py checks that render_op ignores them), so that
# inserting an entry does not re-key every entry below it.
_UNKEYED_FIELDS = frozenset({"file", "line", "entry", "raw"})


def digest(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


# ------------------------------------------------------------------ keys


def canonical(obj: Any) -> Any:
    """A JSON-able, order-independent rendering of specs data (dataclasses,
    yaml values, sets); raises TypeError rather than guess (a repr with an
    address in it would silently make every key unstable)."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [canonical(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, (set, frozenset)):
        return sorted((canonical(x) for x in obj), key=_dumps)
    if type(obj).__name__ == "FunctionSchema":
        return str(obj)  # parsing guarantees the string is canonical
    if dataclasses.is_dataclass(obj):
        d = {f: canonical(getattr(obj, f)) for f in _keyed_fields(type(obj))}
        d["<t>"] = type(obj).__name__
        return d
    if isinstance(obj, enum.Enum):
        return canonical(obj.value)
    if isinstance(obj, (datetime.date, datetime.datetime)):  # yaml timestamps
        return obj.isoformat()
    raise TypeError(f"cannot key a {type(obj).__name__}")


@functools.lru_cache(maxsize=None)
def _keyed_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in _UNKEYED_FIELDS)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def hash_of(obj: Any) -> str:
    return digest(_dumps(canonical(obj)).encode())


@functools.lru_cache(maxsize=None)
def generator_version() -> str:
    """Hash of the generator's own source (every file of the codegen package
    but bytecode): editing a template or a helper regenerates everything."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = xxhash.xxh3_128()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")) or name.startswith("."):
                continue
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read())
            h.update(b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class OpKey:
    op: str
    key: str      # what decides regeneration
    entry: str    # digest of the raw derivatives entry  } kept apart only
    native: str   # digest of the matched native function } to say *why*
    info: str     # digest of everything else the text depends on

    def as_json(self) -> list:
        return [self.op, self.key, self.entry, self.native, self.info]


def op_key(info: Any, options: dict, generator: str) -> OpKey:
    entry = hash_of(info.entry)
    # Derived functions (view_copy, out= siblings) have no yaml of their own:
    # their schema stands for them.
    native = hash_of(info.func.raw or {"<derived>": str(info.func.func)})
    semantic = hash_of(info)
    key = hash_of({"op": info.op, "generator": generator, "options": options,
                   "entry": entry, "native": native, "info": semantic})
    return OpKey(info.op, key, entry, native, semantic)


def options_json(opts: Any) -> dict:
    return canonical(opts)


# -------------------------------------------------------------- manifest


@dataclass
class Manifest:
    inputs: dict            # role -> digest of the file's bytes (None: not given)
    generator: str
    options: dict
    ops: list[OpKey]        # emission order
    files: dict             # relpath -> owning op ("" for shared files)
    stats: dict             # relpath -> [size, mtime_ns] when last written/checked
    sources: list[str]      # relpaths to compile, in order

    def to_json(self) -> dict:
        return {"inputs": self.inputs, "generator": self.generator, "options": self.options,
                "ops": [k.as_json() for k in self.ops], "files": self.files,
                "stats": self.stats, "sources": self.sources}

    @classmethod
    def from_json(cls, d: Any) -> "Manifest":
        if not isinstance(d, dict):
            raise ValueError("not an object")
        ops = [OpKey(*k) for k in d["ops"]]
        if not all(isinstance(x, str) for k in ops for x in k.as_json()):
            raise ValueError("bad op record")
        files, stats, sources = d["files"], d["stats"], d["sources"]
        if not (isinstance(files, dict) and isinstance(stats, dict) and isinstance(sources, list)
                and isinstance(d["inputs"], dict) and isinstance(d["options"], dict)
                and isinstance(d["generator"], str)):
            raise ValueError("bad field types")
        return cls(d["inputs"], d["generator"], d["options"], ops, files, stats, sources)


def read_manifest(path: str) -> tuple[Optional[Manifest], Optional[str]]:
    """(manifest, None), (None, None) if there is none, or (None, what is
    wrong with it)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"unreadable ({e.strerror})"
    head, nl, body = data.partition(b"\n")
    parts = head.split(b" ")
    if len(parts) != 3 or parts[0] != _MAGIC.encode():
        return None, "not a manifest (bad header)"
    if parts[1] != str(FORMAT).encode():
        return None, f"format {parts[1].decode(errors='replace')!r}, expected {FORMAT}"
    if not nl or digest(body).encode() != parts[2]:
        return None, "checksum mismatch (corrupt, truncated or edited)"
    try:
        return Manifest.from_json(json.loads(body)), None
    except (ValueError, KeyError, TypeError) as e:
        return None, f"malformed ({e})"


def write_manifest(path: str, m: Manifest) -> None:
    from .writer import write_atomic
    body = _dumps(m.to_json()).encode()
    write_atomic(path, f"{_MAGIC} {FORMAT} {digest(body)}\n".encode() + body)


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


def _stat(path: str) -> Optional[list]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


# ---------------------------------------------------------------- update


@dataclass
class Result:
    """What one update did (or, on a dry run, would do)."""
    out_dir: str
    ops: list[str]                 # emission order
    sources: list[str]             # relpaths to compile
    regenerated: list[str] = field(default_factory=list)   # ops with a file rewritten
    removed: list[str] = field(default_factory=list)
    reasons: dict = field(default_factory=dict)   # op -> why it was (re)rendered or removed
    keys: dict = field(default_factory=dict)      # op -> key
    parsed: bool = False           # False: the manifest fast path, no YAML read
    warning: Optional[str] = None  # a distrusted manifest
    dry_run: bool = False

    @property
    def unchanged(self) -> int:
        return len(self.ops) - len(set(self.regenerated) & set(self.ops))


def _input_digests(native_functions: str, derivatives: str, tags: Optional[str]) -> dict:
    from .errors import SpecError
    out = {}
    for role, path in (("native_functions", native_functions), ("derivatives", derivatives),
                       ("tags", tags)):
        if path is None:
            out[role] = None
            continue
        try:
            with open(path, "rb") as f:
                out[role] = digest(f.read())
        except OSError as e:
            raise SpecError(f"cannot read file: {e.strerror}", path) from None
    return out


def _dirty_files(out_dir: str, m: Manifest) -> set:
    """Outputs missing, or changed since the manifest was written."""
    return {rel for rel, st in m.stats.items() if _stat(os.path.join(out_dir, rel)) != st}


def update(out_dir: str, native_functions: str, derivatives: str, tags: Optional[str] = None,
           opts: Any = None, dry_run: bool = False,
           render: Optional["Renderer"] = None) -> Result:
    """Bring `out_dir` up to date with the specs.  Raises SpecError on bad
    input, before anything is written."""
    if opts is None:
        from .emit.options import EmitOptions
        opts = EmitOptions()
    inputs = _input_digests(native_functions, derivatives, tags)
    options, generator = options_json(opts), generator_version()
    mpath = os.path.join(out_dir, MANIFEST)
    old, problem = read_manifest(mpath)
    warning = f"ignoring {mpath}: {problem}; regenerating from scratch" if problem else None

    dirty = _dirty_files(out_dir, old) if old is not None else set()
    if old is not None and not dirty and \
            (old.inputs, old.generator, old.options) == (inputs, generator, options):
        # The fast path: nothing to parse, nothing to write.
        return Result(out_dir, [k.op for k in old.ops], list(old.sources),
                      keys={k.op: k.key for k in old.ops})

    render = render or default_renderer()  # imports yaml and the emitter: slow path only
    infos = render.load(native_functions, derivatives, tags)
    if not getattr(opts, "kernels", True):
        infos = [i for i in infos if not _is_kernel(i.op)]
    keys = [op_key(i, options, generator) for i in infos]
    return _apply(out_dir, mpath, infos, keys, old, dirty, inputs, generator, options, opts,
                  render, dry_run, warning)


def _why(k: OpKey, old_keys: dict, old_by_entry: dict, old: Optional[Manifest],
         options: dict, generator: str, dirty_ops: set) -> Optional[str]:
    """Why op `k` must be rendered, or None if its outputs are up to date."""
    prev = old_keys.get(k.op)
    if prev is None:
        was = old_by_entry.get((k.entry, k.native))
        if was and was != k.op:
            return f"renamed from {was}"
        return "new" if old is not None else "no trusted manifest"
    if prev.key == k.key:
        return "output missing or modified on disk" if k.op in dirty_ops else None
    if old is not None and old.generator != generator:
        return "generator changed"
    if old is not None and old.options != options:
        return "options changed"
    if prev.entry != k.entry:
        return "derivatives entry changed"
    if prev.native != k.native:
        return "native function changed"
    return "derived info changed"  # e.g. tags, or a foreach/view_copy source


def _apply(out_dir, mpath, infos, keys, old, dirty, inputs, generator, options, opts,
           render, dry_run, warning) -> Result:
    old_keys = {k.op: k for k in old.ops} if old else {}
    old_by_entry = {(k.entry, k.native): k.op for k in old.ops} if old else {}
    dirty_ops = {old.files.get(r) for r in dirty} if old else set()
    ops = [k.op for k in keys]
    live = set(ops)  # op_infos checked that names are unique

    # Render in memory first: an emission error must leave the tree as it was.
    reasons, files, owner = {}, {}, {}
    for info, k in zip(infos, keys):
        why = _why(k, old_keys, old_by_entry, old, options, generator, dirty_ops)
        if why is None:  # up to date: keep what the manifest says it owns
            for rel in (r for r, o in old.files.items() if o == k.op):
                owner[rel] = k.op
            continue
        reasons[k.op] = why
        for rel, text in render.op(info, opts).items():
            files[rel] = text
            owner[rel] = k.op
    shared = render.shared([op for op in ops if not _is_kernel(op)], opts)
    for rel in shared:
        owner[rel] = ""
    files.update(shared)
    removed = [op for op in old_keys if op not in live]
    for op in removed:
        reasons[op] = "no longer in the specs"

    result = Result(out_dir, ops, _sources(owner, ops, opts), removed=removed, reasons=reasons,
                    keys={k.op: k.key for k in keys}, parsed=True, warning=warning,
                    dry_run=dry_run)
    if dry_run:
        differ = {owner[r] for r, t in files.items() if _differs(out_dir, r, t)}
        result.regenerated = [op for op in ops if op in reasons and op in differ]
        return result

    _unlink(mpath)  # from here until the new manifest, the tree is "unknown"
    written = write_files(out_dir, files)
    written_by = {owner.get(r) for r in written}  # (a set: ops x files was 0.3 s on a cold run)
    result.regenerated = [op for op in ops if op in written_by]
    _prune(out_dir, owner)
    stats = {rel: _stat(os.path.join(out_dir, rel)) for rel in owner}
    missing = [rel for rel, st in stats.items() if st is None]
    if missing:  # an op we thought up to date lost a file under us: next run fixes it
        raise OSError(f"generated file vanished during generation: {missing[0]}")
    write_manifest(mpath, Manifest(inputs, generator, options, list(keys), owner, stats,
                                   result.sources))
    return result


def _sources(owner: dict, ops: Sequence[str], opts: Any) -> list[str]:
    """What to compile: the per-op TUs, or the unity buckets if asked for."""
    if getattr(opts, "unity", 0):
        # Buckets hold the Functions; op kernels stay one TU each.
        return sorted(r for r, o in owner.items() if o == "" and r.startswith("unity/")
                      and r.endswith(".cpp")) + \
            [r for op in ops if _is_kernel(op) for r in sorted(k for k, o in owner.items() if o == op)
             if r.endswith(".cpp")]
    by_op: dict = {}
    for rel, op in owner.items():
        if op and rel.endswith(".cpp"):
            by_op.setdefault(op, []).append(rel)
    return [rel for op in ops for rel in sorted(by_op.get(op, ()))]


def _differs(out_dir: str, rel: str, text: str) -> bool:
    try:
        with open(os.path.join(out_dir, rel), encoding="utf-8", newline="") as f:
            return f.read() != text
    except OSError:
        return True


def write_files(out_dir: str, files: dict) -> list[str]:
    """Write each file whose bytes differ (atomically); return those written."""
    from .writer import write_tree
    return sorted(write_tree(out_dir, files, prune=False).written)


def _prune(out_dir: str, owner: dict) -> None:
    """Delete what no live op or bucket owns in the owned folders: files of
    removed ops (sources, headers, objects alike) and stray temporaries."""
    keep: dict = {}
    for rel in owner:
        d, _, name = rel.rpartition("/")
        keep.setdefault(d, set()).add(name.split(".", 1)[0])
    for d in _OWNED_DIRS:
        folder = os.path.join(out_dir, d)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            continue
        stems = keep.get(d, set())
        for name in names:
            stem = name.split(".", 1)[0]
            if stem not in stems or name.endswith(".tmp"):
                _unlink(os.path.join(folder, name))


# ------------------------------------------------------- the generator API


@dataclass(frozen=True)
class Renderer:
    """The three generator steps update() needs, injectable for tests."""
    load: Callable[[str, str, Optional[str]], list]   # specs -> op infos, emission order
    op: Callable[[Any, Any], dict]                     # info, opts -> {relpath: text}
    shared: Callable[[list, Any], dict]                # op names, opts -> {relpath: text}


def default_renderer() -> Renderer:
    from .emit import functions
    from .generate import load_units, render_unit
    return Renderer(load_units, render_unit, functions.render_shared)


def _is_kernel(op: str) -> bool:
    # Units are Functions (`MulBackward0`) or op kernels (`myops::scale_`):
    # see emit/kernels.py.  Inlined to keep the emitter off the fast path.
    return "::" in op


# ---------------------------------------------------------------- report


def report(result: Result) -> str:
    """One line: 'N Functions: a regenerated, b unchanged, c removed; why'."""
    n, a, c = len(result.ops), len(result.regenerated), len(result.removed)
    verb = "would be " if result.dry_run else ""
    kernels = sum(1 for op in result.ops if _is_kernel(op))
    what = f"{n - kernels} Functions" + (f" + {kernels} op kernels" if kernels else "")
    head = (f"{what}: {verb}{a} regenerated, {result.unchanged} unchanged, "
            f"{verb}{c} removed")
    if not result.parsed:
        return head + "; inputs unchanged (specs not parsed)"
    groups: dict = {}
    for op, why in result.reasons.items():
        groups.setdefault(why, []).append(op)
    parts = []
    for why, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        parts.append(f"{why}: {len(names)} ({shown})")
    rendered = len([op for op in result.reasons if op not in result.removed])
    if rendered > a:
        parts.append(f"{rendered - a} re-rendered identical, left untouched")
    return head + "; " + ("; ".join(parts) if parts else "specs changed, no Function affected")


def explain(result: Result, op: str) -> str:
    """Why `op` was (or was not) regenerated, in `--debug=explain` style."""
    if op in result.removed:
        return f"{op}: removed: {result.reasons[op]}"
    if op not in result.keys:
        import difflib
        close = difflib.get_close_matches(op, result.ops, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        return f"{op}: not a Function of these specs{hint}"
    key = result.keys[op][:16]
    if not result.parsed:
        return f"{op}: up to date: inputs unchanged since the last build, key {key}"
    why = result.reasons.get(op)
    if why is None:
        return f"{op}: up to date: key {key} unchanged"
    if op in result.regenerated:
        return f"{op}: regenerated: {why} (key now {key})"
    return f"{op}: re-rendered ({why}), output identical: not rewritten"
