"""Incremental generation: bring an output folder in line with the specs.

`update()` is the one pipeline from specs to files, used by the SCons tool
and by `python -m autograd_scons generate` alike.  It rewrites only the files of
units whose key changed (keys.py), deletes what units that are gone owned,
lays out the compile units (buckets.py), and, when the input files' bytes,
the generator and the options are those recorded in the manifest
(manifest.py), does not even parse YAML.

Crash safety: all text is rendered in memory before anything is touched; the
manifest is deleted before the first output write and written (atomically)
last, so after a crash or kill the next run finds no manifest, re-renders
everything and rewrites only the files whose bytes differ.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from ..emit.cache_key import cache_key_source, digested, file_digest, library_digest
from ..emit.options import EmitOptions, with_default_namespace
from autograd_scons.base.errors import SpecError
from .functions_request import FunctionsRequest
from .keys import UnitKey, canonical, digest, generator_version, unit_key
from .buckets import Layout, bucket_of, plan
from ..tree import (CACHE_KEY_CPP, JSON_SHIM_FOLDER, MANIFEST, NATIVE_CACHE, OWNED_FOLDERS, PATCH_SUMMARY, TranslationUnit, TUKind,
                   bucket_file, bucket_index, translation_unit)
from .manifest import Manifest, discard_manifest, read_manifest, write_manifest
from .reasons import Reason, Why
from .units import Kind, LoadedSpecs, Unit, load_model
from .writer import prune, same_bytes, stat_of, write_files

if TYPE_CHECKING:
    from ..model.declared_kernel import DeclaredKernel
    from ..model.extension_op import KernelUnit

# Every SCons run imports this module, a no-op build's included, which takes
# the manifest's fast path: the parser, the model and the emitters (their
# frozen dataclasses are most of the tool's import time) are imported by
# the slow path alone, in the functions below.


@dataclass(frozen=True)
class _Build:
    """How the caller builds what an update writes (not what it asks for:
    that is the FunctionsRequest)."""
    opts: EmitOptions
    unity: Optional[int]           # None: automatic bucket count; 0: one TU per unit
    jobs: int                      # parallel compiles (for the automatic count)
    others: int                    # the caller's own TUs compiled alongside (layout.bucket_count)
    dry_run: bool
    override: bool
    build_digest: bool             # the caller writes cache_key.cpp (the SCons tool: tool/build_digest.py)


@dataclass
class Result:
    """What one update did (or, on a dry run, would do)."""
    out_dir: str
    units: list[str]               # emission order
    kinds: dict                    # unit -> Kind
    tus: list[TranslationUnit]     # what to compile, in link order
    layout: Layout
    regenerated: list[str] = field(default_factory=list)   # units with a file rewritten
    removed: list[str] = field(default_factory=list)
    reasons: dict = field(default_factory=dict)   # unit -> Why it was (re)rendered or removed
    keys: dict = field(default_factory=dict)      # unit -> key
    parsed: bool = False           # False: the manifest fast path, no YAML read
    warning: Optional[str] = None  # a distrusted manifest
    foreign: list[str] = field(default_factory=list)  # files in our folders we did not make
    dry_run: bool = False
    # Python bindings (emit/python_bindings/binding_units.py), known when the specs were parsed:
    bindings: dict = field(default_factory=dict)   # Function -> its binding TU
    bindings_rewritten: list[str] = field(default_factory=list)  # binding TUs whose bytes changed
    # op kernel -> its tensor inputs with no formula, checked at run time (check_no_requires_grad)
    unchecked: dict = field(default_factory=dict)
    # A patch of libtorch's Functions (patch_selection.py, Selection): what it defines and leaves out.
    patch: Optional[object] = None
    # The kernels the specs' `dispatch:` declares for the extension to define
    # (kept in the manifest: known on the fast path too).
    kernels: list[DeclaredKernel] = field(default_factory=list)
    # The generated code's digest (emit/cache_key.py), whoever writes cache_key.cpp; "" for a patch.
    code_digest: str = ""
    # Each generated file's part of it (kept in the manifest: the next update
    # reads no file whose stat the manifest vouches for).
    file_digests: dict = field(default_factory=dict)

    @property
    def sources(self) -> list[str]:
        """The TUs' paths, relative to the output folder (the manifest's record)."""
        return [t.path for t in self.tus]

    def of_kind(self, *kinds: TUKind) -> list[TranslationUnit]:
        return [t for t in self.tus if t.kind in kinds]

    @property
    def unchanged(self) -> int:
        return len(self.units) - len(set(self.regenerated) & set(self.units))


@dataclass(frozen=True)
class Renderer:
    """The generator steps update() needs, injectable for tests."""
    load: Callable[..., LoadedSpecs]       # specs, kernels= -> units (emission order), parsed specs
    shared: Callable[[list, EmitOptions], dict]   # Function names, opts -> {relpath: text}


def default_renderer() -> Renderer:
    # Imported here: the manifest fast path never loads the emitters.
    from ..emit.functions.function_files import render_shared
    return Renderer(load_model, render_shared)


def _input_digests(native_functions: str, derivatives: str, tags: Optional[str]) -> dict:
    out: dict = {}
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


def _op_namespaces(units: list[Unit]) -> list:
    """(namespace, file, line, entry) of every unit's native function, in file order."""
    seen = {(f.line or 0, f.namespace, f.file or "", f"{f.namespace}::{f.func}")
            for f in (u.subject.func for u in units)}
    return [(ns, file or None, line or None, entry) for line, ns, file, entry in sorted(seen)]


def _options(requested: dict, resolved: EmitOptions) -> dict:
    """What the manifest records of the options: as requested (compared
    before any parsing, for the fast path) and as resolved from the specs
    (the default namespace: in every key, so a change regenerates)."""
    return {"requested": requested, "resolved": canonical(resolved)}


def update(out_dir: str, request: FunctionsRequest, *, jobs: int = 1, others: int = 0, dry_run: bool = False,
           override: bool = False, build_digest: bool = False, render: Optional[Renderer] = None) -> Result:
    """Bring `out_dir` up to date with the specs `request` names.  `jobs`:
    the parallel compiles (for the automatic bucket count); `others`: the
    caller's own TUs compiled alongside (layout.bucket_count); `dry_run`:
    write nothing; `override`: the caller links each bucket holding shadowed
    old text as a copy whose symbols the edit TUs define are weak
    (tool/weaken.py), so an edited unit can leave its bucket
    unrecompiled; `build_digest`: the caller writes `cache_key.cpp` itself
    when it builds, from every input of the library (the SCons tool does:
    the sources and headers its scanner finds, the flags, the compiler), so
    the generator writes none (without it, its digest is of the generated
    code alone: emit/cache_key.py).  Raises SpecError on bad input, before
    anything is written."""
    native_functions, derivatives, tags = request.native_functions, request.derivatives, request.tags
    build = _Build(request.emit, request.unity, jobs, others, dry_run, override, build_digest)
    inputs = _input_digests(native_functions, derivatives, tags)
    requested, generator = canonical(build.opts), generator_version()
    mpath = os.path.join(out_dir, MANIFEST)
    old, problem = read_manifest(mpath)
    warning = f"ignoring {mpath}: {problem}; regenerating from scratch" if problem else None

    dirty = {rel for rel, st in old.stats.items()
             if stat_of(os.path.join(out_dir, rel)) != st} if old else set()
    if old is not None and not dirty and old.layout.request == build.unity and \
            (old.inputs, old.generator, old.options.get("requested")) == (inputs, generator, requested):
        # The fast path: nothing to parse, nothing to write.
        return Result(out_dir, [k.name for k in old.units], {k.name: Kind(k.kind) for k in old.units},
                      [translation_unit(r) for r in old.sources], old.layout,
                      keys={k.name: k.key for k in old.units}, kernels=old.kernels,
                      code_digest=old.code_digest)

    render = render or default_renderer()  # imports yaml and the emitter: slow path only
    from .native_cache import NativeCache
    from ..parse.yaml_io import gc_paused  # (the parser: the slow path only)
    cache = NativeCache(os.path.join(out_dir, NATIVE_CACHE))
    try:
        # The units, keys and texts are ~10^6 live objects at 8x torch's specs:
        # every full collection would walk them all (a one-edit update grew
        # faster than the specs: ~15% of its time at 8x).
        with gc_paused():
            loaded = render.load(native_functions, derivatives, tags, kernels=build.opts.kernels, native_cache=cache)
            units = loaded.units
            selection = None
            if build.opts.patch is not None:  # libtorch's own Functions: those the patch defines
                from .patch_selection import select
                selection = select(units, build.opts.patch, out_dir, loaded)
                units = selection.units
            build = dataclasses.replace(build, opts=with_default_namespace(build.opts, _op_namespaces(units)))
            options = _options(requested, build.opts)
            keys = [unit_key(u, options, generator) for u in units]
            state = _State(out_dir, old, dirty, options, generator, warning)
            files, owner, result = state.render(units, keys, build, render)
            if selection is not None:
                result.patch = selection
                files[PATCH_SUMMARY], owner[PATCH_SUMMARY] = selection.summary(), ""
        if build.dry_run:
            return result
        discard_manifest(mpath)
        write_files(out_dir, {rel: text for rel, text in files.items() if rel != CACHE_KEY_CPP})
        write_files(out_dir, {rel: text for rel, text in files.items() if rel == CACHE_KEY_CPP})  # the code's digest last
        pruned = prune(out_dir, OWNED_FOLDERS + (JSON_SHIM_FOLDER,), set(owner), set(old.files) if old else set())
        result.foreign = pruned.foreign
        stats = {rel: stat_of(os.path.join(out_dir, rel)) for rel in owner}
        missing = [rel for rel, st in stats.items() if st is None]
        if missing:  # a unit we thought up to date lost a file under us: next run fixes it
            raise OSError(f"generated file vanished during generation: {missing[0]}")
        write_manifest(mpath, Manifest(inputs, generator, options, keys, owner, stats, result.layout,
                                       result.sources, result.kernels, result.code_digest, result.file_digests))
        cache.flush()  # (after the manifest: the cache only ever holds a parse of a good update)
    finally:
        cache.close()  # (a fresh parse not flushed: a failed update or a dry run; its writer exits)
    return result


class _State:
    """What the previous manifest says, and how this run differs from it."""

    def __init__(self, out_dir, old: Optional[Manifest], dirty: set, options: dict, generator: str,
                 warning: Optional[str]):
        self.out_dir, self.old, self.warning = out_dir, old, warning
        self.options, self.generator = options, generator
        self.old_keys = {k.name: k for k in old.units} if old else {}
        self.old_by_entry = {(k.kind, k.entry, k.native): k.name for k in old.units} if old else {}
        self.dirty, self.dirty_units = dirty, ({old.files.get(r) for r in dirty} if old else set())
        # unit -> the files the manifest says it owns, indexed once: looking
        # them up per unchanged unit by scanning every file entry made a
        # one-formula edit cost units x files (65 M steps on 8x torch's specs).
        self.old_owned: dict[str, list[str]] = {}
        for rel, unit in (old.files.items() if old else ()):
            self.old_owned.setdefault(unit, []).append(rel)

    def why(self, k: UnitKey) -> Optional[Why]:
        """Why unit `k` must be rendered, or None if its outputs are up to date."""
        prev, old = self.old_keys.get(k.name), self.old
        if prev is None or old is None:
            was = self.old_by_entry.get((k.kind, k.entry, k.native))
            if was and was != k.name:
                return Why(Reason.RENAMED, was)
            return Why(Reason.NEW if old is not None else Reason.NO_MANIFEST)
        if prev.key == k.key:
            return Why(Reason.DIRTY) if k.name in self.dirty_units else None
        if old.generator != self.generator:
            return Why(Reason.GENERATOR)
        if old.options != self.options:
            return Why(Reason.OPTIONS)
        if prev.entry != k.entry:
            return Why(Reason.ENTRY)
        if prev.native != k.native:
            return Why(Reason.NATIVE)
        return Why(Reason.DERIVED)

    def stale_buckets(self, lay: Layout, units: list[Unit], headers: set) -> set:
        """Buckets of the old layout `lay` holding a shadowed unit's old text
        that includes one of `headers`."""
        from .unity_files import included_by_members
        source = {u.name: u.source for u in units}
        out = set()
        for b in {bucket_of(s, lay.buckets) for s in lay.shadowed if s in source}:
            try:
                with open(os.path.join(self.out_dir, bucket_file(b)), encoding="utf-8") as f:
                    members = included_by_members(f.read())
            except OSError:
                out.add(b)  # gone: rewritten anyway
                continue
            if any(members.get(source[s], set()) & headers for s in lay.shadowed
                   if s in source and bucket_of(s, lay.buckets) == b):
                out.add(b)
        return out

    def render(self, units: list[Unit], keys: list[UnitKey], build: _Build,
               render: Renderer) -> tuple[dict, dict, Result]:
        """Render in memory first: an emission error must leave the tree as it
        was.  The steps: the units that must be rendered, the layout, the
        files every unit shares, the result."""
        from ..emit.python_bindings import binding_units
        from ..model.extension_op import declared_kernels
        from .unity_files import translation_units
        rendered = self._render_units(units, keys, build.opts)
        bound = [u for u in units if u.kind is Kind.FUNCTION and u.bound] if build.opts.python else []
        n_shards = len(binding_units.sources(len(bound)))
        p = self._plan_layout(units, build, rendered, others=build.others + n_shards)
        rewritten = self._render_shared(units, build, render, rendered, p, bound)
        names = [u.name for u in units]
        tus = translation_units(units, p.layout) + \
            [TranslationUnit(rel, TUKind.BINDING) for rel in binding_units.sources(len(bound))]
        if build.opts.patch is None:  # (a patch of libtorch's Functions defines no op: emit/cache_key.py)
            tus.append(TranslationUnit(CACHE_KEY_CPP, TUKind.CACHE_KEY))
        result = Result(self.out_dir, names, {k.name: Kind(k.kind) for k in keys}, tus, p.layout,
                        removed=rendered.removed, reasons=rendered.reasons, keys={k.name: k.key for k in keys},
                        parsed=True, warning=self.warning, dry_run=build.dry_run,
                        bindings={u.name: binding_units.shard_file(binding_units.shard_of(u.name, n_shards))
                                  for u in bound},
                        bindings_rewritten=rewritten, unchecked=_unchecked_inputs(units),
                        kernels=declared_kernels(_extension_kernels(units)))
        result.regenerated = [n for n in names if n in rendered.changed]
        result.code_digest, result.file_digests = rendered.code_digest, rendered.file_digests
        return rendered.files, rendered.owner, result

    def _render_units(self, units: list[Unit], keys: list[UnitKey], opts: EmitOptions) -> "_Rendered":
        """Each unit whose outputs are not up to date, rendered; the files
        whose bytes differ from what is on disk; who owns every file."""
        r = _Rendered()
        for u, k in zip(units, keys):
            why = self.why(k)
            if why is None:  # up to date: keep what the manifest says it owns
                r.owner.update((rel, k.name) for rel in self.old_owned.get(k.name, ()))
                continue
            r.reasons[k.name] = why
            r.texts[k.name] = u.render(opts)
            for rel, text in r.texts[k.name].items():
                r.owner[rel] = k.name
                if not same_bytes(os.path.join(self.out_dir, rel), text.encode()):
                    r.files[rel] = text  # only what differs is written, and counts as an edit
                    r.changed.setdefault(k.name, set()).add(rel)
        live = {u.name for u in units}
        r.removed = [n for n in self.old_keys if n not in live]
        r.reasons.update((n, Why(Reason.REMOVED)) for n in r.removed)
        return r

    def _plan_layout(self, units: list[Unit], build: _Build, r: "_Rendered", others: int):
        """The compile layout (layout.plan), from the edits this run found."""
        from .unity_files import included
        old = self.old
        trusted = old.layout if old is not None and (old.generator, old.options) == (self.generator, self.options) \
            else None
        edited = [n for n, why in r.reasons.items() if why.reason.is_edit and n in r.changed]
        # Shadowing a unit keeps its old text in its bucket, which SCons
        # recompiles if a header that text includes changes: so only units
        # whose .cpp alone changed and whose generated headers did not; and
        # a bucket whose old text includes a changed header is rewritten.
        headers = {rel for rel in r.files if rel.endswith(".h")}
        keep = [u.name for u in units if build.override and r.changed.get(u.name) == {u.source}
                and not included(u.source, r.texts[u.name][u.source]) & headers]
        damaged = {i for i in (bucket_index(rel) for rel in self.dirty) if i is not None}
        if headers and trusted is not None and trusted.shadowed:
            damaged |= self.stale_buckets(trusted, units, headers)
        return plan(build.unity, [u.name for u in units], build.jobs, trusted,
                    self.old_keys, edited, keep=keep, damaged=damaged, others=others)

    def _render_shared(self, units: list[Unit], build: _Build, render: Renderer, r: "_Rendered",
                       p, bound: list[Unit]) -> list[str]:
        """The files every unit shares (headers, bindings, buckets, edit TUs)
        added to `r`; returns the binding TUs whose bytes changed."""
        from ..emit.lines import render_lines
        from ..emit.op_kernels.vmap import render_json_shim
        from ..emit.python_bindings import binding_units
        from .unity_files import render_buckets, render_edit_tus

        def text_of(u: Unit) -> str:
            if u.name not in r.texts:
                r.texts[u.name] = u.render(build.opts)
            return r.texts[u.name][u.source]

        shared = render.shared([u.name for u in units if u.kind is Kind.FUNCTION], build.opts)
        # Bindings are rendered from every bound Function's saved values each
        # time (cheap); a shard is rewritten, so recompiled, only if its bytes change.
        bindings = binding_units.render_bindings([u.info for u in bound], build.opts)
        rewritten = sorted(rel for rel, text in bindings.items() if rel.endswith(".cpp")
                           and not same_bytes(os.path.join(self.out_dir, rel), text.encode()))
        shared.update(bindings)
        # every formula's yaml line, outside the Functions' keys (emit/lines.py)
        shared.update(render_lines([u.info for u in units if u.kind is Kind.FUNCTION]))
        if any(k.func.vmap is not None for k in _extension_kernels(units)):
            shared.update(render_json_shim())   # (what the vmap plumbing's functorch headers include)
        if build.opts.patch is None:
            # Under SCons the tool writes cache_key.cpp from this digest and the
            # library's other inputs (tool/build_digest.py).
            r.file_digests = dict(self._generated(r, shared))
            r.code_digest = library_digest(r.file_digests.items())
            if not build.build_digest:
                shared[CACHE_KEY_CPP] = cache_key_source(r.code_digest)
        shared.update(render_buckets(units, p.layout, p.rewrite, text_of))
        shared.update(render_edit_tus(units, p.layout))
        for rel, text in shared.items():
            r.files[rel], r.owner[rel] = text, ""
        for i in set(range(p.layout.buckets)) - p.rewrite:  # kept as they are, old text and all
            r.owner[bucket_file(i)] = ""
        return rewritten

    def _generated(self, r: "_Rendered", shared: dict):
        """(relpath, file digest) of every unit's file and of `shared`, the
        files the library's digest covers: a unit not rendered this run has
        its files on disk, up to date, and the digest the manifest recorded
        for them while their stat is the one it recorded (not dirty)."""
        recorded = self.old.file_digests if self.old is not None else {}
        for rel, unit in r.owner.items():
            if not digested(rel):
                continue
            text = r.texts.get(unit, {}).get(rel)
            if text is not None:
                yield rel, file_digest(text.encode())
            elif rel in recorded and rel not in self.dirty:
                yield rel, recorded[rel]
            else:
                yield rel, file_digest(read_generated(os.path.join(self.out_dir, rel)))
        yield from ((rel, file_digest(text.encode())) for rel, text in shared.items() if digested(rel))


def read_generated(path: str) -> bytes:
    """An unchanged generated file's bytes (for its digest, when the manifest has none)."""
    with open(path, "rb") as f:
        return f.read()


@dataclass
class _Rendered:
    """What _State.render's steps hand each other."""
    reasons: dict = field(default_factory=dict)   # unit -> Why
    files: dict = field(default_factory=dict)     # relpath -> text to write (its bytes differ)
    owner: dict = field(default_factory=dict)     # relpath -> unit ("" for shared files)
    texts: dict = field(default_factory=dict)     # unit -> its rendered {relpath: text}
    changed: dict = field(default_factory=dict)   # unit -> its relpaths whose bytes differ
    code_digest: str = ""                         # the generated code's (emit/cache_key.py)
    file_digests: dict = field(default_factory=dict)   # relpath -> its part of code_digest
    removed: list = field(default_factory=list)


def _unchecked_inputs(units: list) -> dict:
    """Each op kernel's tensor inputs that have no formula (legal, as in
    ATen: refused at run time when they require grad), for the report."""
    out = {}
    for k in _extension_kernels(units):
        if k.differentiated is not None:
            names = k.inputs_without_formula()
            if names:
                out[k.op] = names
    return out


def _extension_kernels(units: list) -> list[KernelUnit]:
    """The extension ops' kernel units (a patch's kernel units are ATen
    ops', emit/aten_kernels/aten_kernel.py's AtenKernel: no declared kernel, no transform)."""
    from ..model.extension_op import KernelUnit
    return [u.subject for u in units if u.kind is Kind.KERNEL and isinstance(u.subject, KernelUnit)]
