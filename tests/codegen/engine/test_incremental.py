"""codegen.engine.incremental without SCons: keys, manifest, fast path, crash safety.

Each test generates the tiny test specs (tests/fixtures/tiny_ext) into a temporary
folder and counts what a second update rewrites.  The edit scenarios are the
ones tests/tool/test_scons_incremental.py runs through `scons` (tests/support/scenarios.py).
"""

import dataclasses
import os
import shutil
import signal
import subprocess
import sys

import pytest

from support import scenarios
from autograd_scons.codegen.engine import incremental
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.codegen.engine.keys import canonical, unit_key
from autograd_scons.codegen.engine.buckets import slot_of
from autograd_scons.codegen.engine.manifest import FORMAT, MANIFEST
from autograd_scons.codegen.engine.native_cache import NATIVE_CACHE
from autograd_scons.codegen.engine.reasons import Reason, Why
from autograd_scons.codegen.engine.update_summary import explain, layout_line, report
from autograd_scons.codegen.engine.units import Kind
from support.scons_helpers import tree
from support.spec_facts import REPO

EXAMPLE = scenarios.TINY
# The op kernels have tests of their own (test_kernels.py, test_scons_example.py); these count Functions.
FUNCTIONS_ONLY = EmitOptions(kernels=False)
OPS = list(scenarios.OPS)


def sentences(result) -> dict:
    """{unit: what the reports say of why it was rendered}."""
    return {u: why.sentence for u, why in result.reasons.items()}


def test_edit_reasons_are_decided_by_the_reason_not_its_sentence():
    edits = {r for r in Reason if r.is_edit}
    assert edits == {Reason.NEW, Reason.RENAMED, Reason.ENTRY, Reason.NATIVE, Reason.DERIVED}
    assert Why(Reason.RENAMED, "MulBackward1").sentence == "renamed from MulBackward1"


def test_result_kinds_are_kinds_on_both_paths(specs):
    first = specs.update()
    again = specs.update()   # the manifest fast path
    assert not again.parsed and again.kinds == first.kinds
    assert Kind.FUNCTION in first.kinds.values() and all(isinstance(k, Kind) for k in first.kinds.values())


class Specs:
    """A copy of the example specs, an output folder, and a counting loader."""

    def __init__(self, root, like=None):
        self.root = root
        root.mkdir(exist_ok=True)
        self.nf = str(root / "native_functions.yaml")
        self.d = str(root / "derivatives.yaml")
        self.out = str(root / "gen")
        shutil.copy(like.nf if like else os.path.join(EXAMPLE, "native_functions.yaml"), self.nf)
        shutil.copy(like.d if like else os.path.join(EXAMPLE, "derivatives.yaml"), self.d)
        base = incremental.default_renderer()
        self.parses = 0

        def load(*a, **k):
            self.parses += 1
            return base.load(*a, **k)
        self.render = dataclasses.replace(base, load=load)

    def update(self, opts=FUNCTIONS_ONLY, **kw):
        kw = {"jobs": scenarios.JOBS, "override": True, **kw}   # as scenarios.py's: the tool's on Linux
        unity = kw.pop("unity", None)
        return incremental.update(self.out, FunctionsRequest(self.nf, self.d, None, opts, unity), render=self.render,
                                  **kw)

    def edit(self, which, old, new):
        scenarios.edit(self.nf if which == "nf" else self.d, old, new)

    def snapshot(self):
        """relpath -> (bytes, mtime_ns) of every file under the output folder
        (but the parse cache, an optimisation: tests/codegen/engine/test_native_cache.py)."""
        out = {}
        for dirpath, _, names in os.walk(self.out):
            for n in names:
                if n == NATIVE_CACHE:
                    continue
                p = os.path.join(dirpath, n)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, self.out)] = (f.read(), os.stat(p).st_mtime_ns)
        return out


def rewritten(before, after):
    """Files whose mtime changed (i.e. were written), files added, removed."""
    return ({p for p in after if p in before and after[p][1] != before[p][1]},
            set(after) - set(before), set(before) - set(after))


@pytest.fixture
def specs(tmp_path):
    s = Specs(tmp_path)
    r = s.update()
    assert r.units == OPS and sorted(r.regenerated) == OPS and s.parses == 1
    return s


@pytest.mark.parametrize("sc", scenarios.EDITS, ids=lambda s: s.name)
def test_edit_regenerates_exactly_what_changed(specs, sc):
    before = specs.snapshot()
    sc.apply(specs.root)
    r = specs.update()
    assert (r.parsed, sorted(r.regenerated), r.removed, r.units) == \
        (sc.parsed, list(sc.regenerated), list(sc.removed), list(sc.ops))
    assert sentences(r) == sc.reasons
    assert r.unchanged == len(sc.ops) - len(sc.regenerated)
    changed, added, gone = rewritten(before, specs.snapshot())
    written = {p for p in changed | added if p.startswith("functions/")}
    # every regenerated Function's .cpp is written, nothing else but its header
    assert {f"functions/{op}.cpp" for op in sc.regenerated} <= written <= \
        {f"functions/{op}.{x}" for op in sc.regenerated for x in ("h", "cpp")}
    assert gone == {f"functions/{op}.{x}" for op in sc.removed for x in ("h", "cpp")}
    assert (".autograd_manifest" in changed) == sc.parsed
    assert r.sources == sc.sources
    assert (r.layout.alone, r.layout.shadowed) == (sc.alone, sc.shadowed)
    assert (f"{scenarios.BUCKET}" in changed) == sc.bucket_recompiles
    # the bindings: rewritten exactly when what a Function saves (or the set of Functions) changed
    assert (scenarios.BINDINGS in changed) == sc.bindings_rewritten
    assert r.bindings_rewritten == ([scenarios.BINDINGS] if sc.bindings_rewritten else [])


def test_noop_report(specs):
    r = specs.update()
    assert specs.parses == 1  # only the cold run parsed
    n = len(scenarios.OPS)
    assert report(r) == f"{n} Functions: 0 regenerated, {n} unchanged, 0 removed; " \
                                    "inputs unchanged (specs not parsed)"


def test_formula_edit_report_and_explain(specs):
    scenarios.BY_NAME["formula"].apply(specs.root)
    r = specs.update()
    assert "derivatives entry changed: 1 (ScaleBackward0)" in report(r)
    assert explain(r, "ScaleBackward0").startswith(
        "ScaleBackward0: regenerated: derivatives entry changed")
    assert explain(r, "MulBackward0").startswith("MulBackward0: up to date: key")
    # the same values saved: its bindings are untouched, and the report and explain say so
    assert explain(r, "ScaleBackward0").endswith(f"; its Python bindings compile in {scenarios.BINDINGS} (unchanged)")
    assert "Python bindings in 1 TU (0 rewritten)" in layout_line(r)


def test_an_edit_that_saves_more_explains_its_rewritten_bindings(specs):
    scenarios.BY_NAME["formula saves more"].apply(specs.root)
    r = specs.update()
    assert explain(r, "ScaleBackward0").endswith(f"; its Python bindings compile in {scenarios.BINDINGS} (rewritten)")
    assert "Python bindings in 1 TU (1 rewritten)" in layout_line(r)
    with open(os.path.join(specs.out, scenarios.BINDINGS)) as f:
        assert "_saved_self" in f.read()
    r = specs.update(EmitOptions(kernels=False, python=False))
    assert explain(r, "ScaleBackward0").endswith("; no Python bindings (python=False)")


def test_native_only_edit_explains_identical_output(specs):
    scenarios.BY_NAME["native only"].apply(specs.root)
    r = specs.update()
    assert "output identical" in explain(r, "ScaleBackward0")


def test_removed_entry_takes_its_objects_and_umbrella_line(specs):
    for op in ("MulBackward1", "ScaleBackward0"):
        open(os.path.join(specs.out, "functions", f"{op}.os"), "w").write("object")
    scenarios.BY_NAME["entry removed"].apply(specs.root)
    r = specs.update()
    names = sorted(os.listdir(os.path.join(specs.out, "functions")))
    assert names == ["MulBackward0.cpp", "MulBackward0.h", "ScaleBackward0.cpp", "ScaleBackward0.h",
                     "ScaleBackward0.os"]
    assert "MulBackward1" not in open(os.path.join(specs.out, "Functions.h")).read()
    assert explain(r, "MulBackward1") == "MulBackward1: removed: no longer in the specs"


@pytest.mark.parametrize("damage", ["flip", "truncate", "version", "hand-edit", "garbage"])
def test_untrusted_manifest_is_rebuilt_from_scratch(specs, damage):
    path = os.path.join(specs.out, MANIFEST)
    data = open(path, "rb").read()
    head, _, body = data.partition(b"\n")
    if damage == "flip":
        i = len(data) // 2
        data = data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]
    elif damage == "truncate":
        data = data[: len(data) * 2 // 3]
    elif damage == "version":
        data = head.replace(f" {FORMAT} ".encode(), b" 99 ") + b"\n" + body
    elif damage == "hand-edit":  # valid JSON, same checksum line
        data = head + b"\n" + body.replace(b'"MulBackward0"', b'"MulBackward9"')
    else:
        data = b"\x00\xff not a manifest"
    open(path, "wb").write(data)
    before = specs.snapshot()
    r = specs.update()
    assert r.warning and r.warning.startswith(f"ignoring {path}: ") and "\n" not in r.warning
    assert r.parsed and sorted(r.reasons) == OPS and r.regenerated == []  # re-rendered, identical
    changed, added, gone = rewritten(before, specs.snapshot())
    assert changed == {".autograd_manifest"} and not added and not gone
    r = specs.update()
    assert not r.parsed and r.warning is None  # trusted again


def test_output_deleted_or_edited_behind_our_back_is_regenerated(specs):
    os.unlink(os.path.join(specs.out, "functions", "MulBackward0.h"))
    with open(os.path.join(specs.out, "functions", "ScaleBackward0.cpp"), "a") as f:
        f.write("// hand edit\n")
    r = specs.update()
    assert sorted(r.regenerated) == ["MulBackward0", "ScaleBackward0"]
    assert set(sentences(r).values()) == {"output missing or modified on disk"}
    fresh = Specs(specs.root / "fresh", like=specs)
    fresh.update()
    assert tree(specs.out) == tree(fresh.out)


def test_output_edited_while_specs_changed_is_regenerated_too(specs):
    with open(os.path.join(specs.out, "functions", "MulBackward1.cpp"), "a") as f:
        f.write("// hand edit\n")
    specs.edit(*scenarios.FORMULA)
    r = specs.update()
    assert sentences(r) == {"MulBackward1": "output missing or modified on disk",
                            "ScaleBackward0": "derivatives entry changed"}
    assert sorted(r.regenerated) == ["MulBackward1", "ScaleBackward0"]


def test_yaml_error_leaves_outputs_and_manifest_untouched(specs):
    before = specs.snapshot()
    good = open(specs.d).read()
    specs.edit(*scenarios.YAML_ERROR)
    with pytest.raises(SpecError) as e:
        specs.update()
    assert str(e.value).startswith(specs.d + ":") and "\n" not in str(e.value)
    assert specs.snapshot() == before
    open(specs.d, "w").write(good)
    r = specs.update()
    assert not r.parsed and r.regenerated == []


def test_unknown_formula_name_error_is_located(specs):
    specs.edit("d", "- name: scale(Tensor self, float alpha)", "- name: scale(Tensor self, int alpha)")
    before = specs.snapshot()
    with pytest.raises(SpecError, match=r"derivatives.yaml:\d+: entry 'scale"):
        specs.update()
    assert specs.snapshot() == before


def test_options_and_generator_changes_rekey_everything(specs, monkeypatch):
    r = specs.update(opts=EmitOptions(namespace="other::ns", kernels=False))
    assert sorted(r.regenerated) == OPS and set(sentences(r).values()) == {"options changed"}
    monkeypatch.setattr(incremental, "generator_version", lambda: "a different generator")
    r = specs.update(opts=EmitOptions(namespace="other::ns", kernels=False))
    assert set(sentences(r).values()) == {"generator changed"} and r.regenerated == []


def test_dry_run_writes_nothing(specs):
    before = specs.snapshot()
    specs.edit(*scenarios.FORMULA)
    r = specs.update(dry_run=True)
    assert r.regenerated == ["ScaleBackward0"] and r.dry_run
    assert "would be 1 regenerated" in report(r)
    assert specs.snapshot() == before


def test_unity_sources_are_the_buckets(specs):
    r = specs.update(unity=2)
    assert r.sources == ["unity/bucket_0.cpp", "unity/bucket_1.cpp", scenarios.BINDINGS, scenarios.CACHE_KEY]
    r = specs.update(unity=1)
    assert r.sources == ["unity/bucket_0.cpp", scenarios.BINDINGS, scenarios.CACHE_KEY]
    assert os.listdir(os.path.join(specs.out, "unity")) == ["bucket_0.cpp"]  # stale bucket pruned


def test_without_override_an_edit_rewrites_its_bucket(specs):
    scenarios.BY_NAME["formula"].apply(specs.root)
    r = specs.update(override=False)
    assert r.layout.alone == ("ScaleBackward0",) and r.layout.shadowed == ()
    with open(os.path.join(specs.out, scenarios.BUCKET)) as f:
        assert "ScaleBackward0" not in f.read()   # nothing is left to override


def test_shadowed_text_stays_until_the_bucket_is_damaged(specs):
    bucket = os.path.join(specs.out, scenarios.BUCKET)
    with open(bucket) as f:
        cold = f.read()
    scenarios.BY_NAME["formula"].apply(specs.root)
    r = specs.update()
    assert r.layout.shadowed == ("ScaleBackward0",)
    with open(bucket) as f:
        assert f.read() == cold and "grad * alpha * 2" not in cold   # the old formula, overridden
    with open(bucket, "a") as f:
        f.write("// edited by hand\n")
    r = specs.update()
    assert r.reasons == {} and r.layout.alone == r.layout.shadowed == ()   # it went back in
    with open(bucket) as f:
        text = f.read()
    assert "grad * alpha * 2" in text and "by hand" not in text
    assert r.sources == [scenarios.BUCKET, scenarios.BINDINGS, scenarios.CACHE_KEY]


KILLER = """
import os, signal, sys
sys.path.insert(0, {repo!r})
from autograd_scons.codegen.engine import incremental
real, n = os.replace, [0]
def replace(a, b):  # every atomic write ends in os.replace: die after the n-th
    real(a, b)
    n[0] += 1
    if n[0] == {after}:
        os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
incremental.update({out!r}, FunctionsRequest({nf!r}, {d!r}, None, EmitOptions(kernels=False)), jobs={jobs},
                   override=True)
"""


@pytest.mark.parametrize("after", [1, 2, 3, 4, 5])
def test_sigkill_mid_generation_then_update_equals_clean_build(specs, after):
    # Two ops edited: two .cpp writes and their edit TU's (both in edit TU
    # 0; their old text stays in the bucket), the digest of the code
    # (cache_key.cpp, after it), then the manifest (the 5th rename).
    assert {slot_of("ScaleBackward0", scenarios.JOBS), slot_of("MulBackward0", scenarios.JOBS)} == {0}
    specs.edit(*scenarios.FORMULA)
    specs.edit(*scenarios.FORMULA_MUL)
    code = KILLER.format(repo=REPO, after=after, out=specs.out, nf=specs.nf, d=specs.d, jobs=scenarios.JOBS)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert os.path.exists(os.path.join(specs.out, MANIFEST)) == (after == 5)
    r = specs.update()
    assert r.parsed == (after < 5)
    fresh = Specs(specs.root / "fresh", like=specs)
    fresh.update()
    if after == 5:  # the update had finished: the edited ops compile alone, the cold layout has them in the bucket
        assert {p: t for p, t in tree(specs.out).items() if not p.startswith("unity")} == \
            {p: t for p, t in tree(fresh.out).items() if not p.startswith("unity")}
    else:
        assert tree(specs.out) == tree(fresh.out)
    assert not specs.update().parsed


def test_render_ignores_unkeyed_fields(specs):
    """Keys leave out file/line (so inserting an entry does not re-key the
    entries below it): that is only sound if the text ignores them too."""
    units = specs.render.load(specs.nf, specs.d, None).units
    assert any(u.kind is Kind.KERNEL for u in units)  # op kernels too
    opts = canonical(EmitOptions())
    for u in units:
        if u.kind is Kind.KERNEL:  # an op kernel: its native function's location
            s = u.subject
            moved = dataclasses.replace(s, func=dataclasses.replace(s.func, file="x", line=1))
        else:
            moved = dataclasses.replace(u.subject, file="elsewhere.yaml", line=u.subject.line + 100, entry={})
        relocated = dataclasses.replace(u, subject=moved)
        assert relocated.render(EmitOptions()) == u.render(EmitOptions())
        if u.kind is Kind.FUNCTION:  # the entry is keyed; its location is not
            relocated = dataclasses.replace(u, subject=dataclasses.replace(u.subject, file="x", line=1))
        assert unit_key(u, opts, "g") == unit_key(relocated, opts, "g")


def test_keys_are_stable_across_processes(specs):
    code = ("from autograd_scons.codegen.engine import incremental as i\n"
            "from autograd_scons.codegen.emit.options import EmitOptions\n"
            "from autograd_scons.codegen.engine.functions_request import FunctionsRequest\n"
            "r = i.update(%r, FunctionsRequest(%r, %r, None, EmitOptions(kernels=False)))\n"
            "print(sorted(r.keys.items()))") % (str(specs.root / "other"), specs.nf, specs.d)
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONHASHSEED=str(seed))).stdout for seed in (1, 2)}
    assert len(outs) == 1 and sorted(specs.update().keys.items()) == eval(outs.pop())


class _CountingFiles(dict):
    """A manifest's `files` (relpath -> owner) that counts the entries any
    iteration over it yields (.get() lookups are not counted)."""
    visited = 0

    def _count(self, it):
        for x in it:
            _CountingFiles.visited += 1
            yield x

    def __iter__(self):
        return self._count(super().__iter__())

    def items(self):
        return self._count(super().items())

    def keys(self):
        return self._count(super().keys())

    def values(self):
        return self._count(super().values())


def test_one_edit_visits_the_old_file_entries_a_bounded_number_of_times(tmp_path, monkeypatch):
    """The render step used to scan every old file entry for each unchanged
    unit (units x files: quadratic in the specs); now a bounded number of
    passes over them, whatever the unit count."""
    root = tmp_path / "example"
    shutil.copytree(os.path.join(REPO, "specs"), root)
    nf, d, out = str(root / "native_functions.yaml"), str(root / "derivatives.yaml"), str(tmp_path / "gen")
    request = FunctionsRequest(nf, d, None, EmitOptions(namespace="myops::autograd",
                                                        includes=("myops/backward_helpers.h",)))
    first = incremental.update(out, request, jobs=2, override=True)
    files = {}
    real_read = incremental.read_manifest

    def counting_read(path):
        m, problem = real_read(path)
        m.files = _CountingFiles(m.files)
        files.update(m.files)
        return m, problem
    monkeypatch.setattr(incremental, "read_manifest", counting_read)
    scenarios.edit(d, "self: grad * alpha\n", "self: grad * alpha * 2\n")
    _CountingFiles.visited = 0
    r = incremental.update(out, request, jobs=2, override=True)
    assert r.parsed and r.regenerated == ["ScaleBackward0"]
    units = len(first.units)
    assert units >= 20 and len(files) >= 2 * units   # a scan per unit would be >= 20x the entries
    # at least one pass (so the counter sees the reads), at most a few
    assert len(files) <= _CountingFiles.visited <= 3 * len(files)


def test_an_update_that_parses_reads_no_unchanged_file_to_digest_it(specs, monkeypatch, tmp_path):
    """The generated code's digest (emit/cache_key.py) takes each unchanged
    file's part from the manifest, which the file's stat vouches for: a
    formula edit reads no generated file back, a file edited behind the
    manifest's back is read again, and the digest is always the one a build
    from scratch of the same specs gives."""
    reads = []
    real = incremental.read_generated
    monkeypatch.setattr(incremental, "read_generated", lambda p: reads.append(p) or real(p))
    specs.edit(*scenarios.FORMULA)
    r = specs.update()
    assert r.regenerated and reads == []
    fresh = Specs(tmp_path / "fresh", like=specs)
    assert r.code_digest == fresh.update().code_digest
    # a file changed behind the manifest's back (its stat moves): regenerated, and read or rendered, never trusted
    header = next(os.path.join(dp, n) for dp, _, ns in os.walk(specs.out) for n in ns if n.endswith(".h")
                  and "functions" in dp)
    with open(header, "a") as f:
        f.write("// edited\n")
    specs.edit("d", "self: grad * alpha * 2", "self: grad * alpha * 3")
    fresh.edit("d", "self: grad * alpha * 2", "self: grad * alpha * 3")
    assert specs.update().code_digest == fresh.update().code_digest
