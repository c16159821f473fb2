"""The generated tree as files: byte-for-byte reproducible in any folder,
changed only where the specs changed, written atomically, pruned safely;
and the `generate` command line around it."""

import os
import shutil
import subprocess
import sys

import pytest

from autograd_scons.codegen.emit.python_bindings import binding_units

from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.engine.buckets import Layout, bucket_of, slot_of
from autograd_scons.codegen.engine.manifest import MANIFEST, read_manifest
from autograd_scons.codegen.engine.unity_files import render_buckets
from autograd_scons.codegen.engine.units import Kind, Unit
from autograd_scons.codegen.engine.writer import prune, write_files

from support.spec_facts import REPO


def run_generate(*args, cwd=None):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "autograd_scons", "generate", *args],
                          cwd=cwd or REPO, env=env, capture_output=True, text=True)


def tree(root):
    """relpath -> bytes of the generated files (not the manifest, whose stats
    differ between folders, nor the lock, nor the parse cache, keyed by its path)."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n in (".autograd_manifest", ".autograd_lock", ".autograd_native_cache"):
                continue
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root).replace(os.sep, "/")] = f.read()
    return out


def mtimes(root):
    return {rel: os.stat(os.path.join(root, rel)).st_mtime_ns for rel in tree(root)}


# ------------------------------------------------------------ real specs


@pytest.fixture(scope="module")
def real_specs(torch_specs):
    return torch_specs


def spec_args(nf, tags, d):
    return ["--native-functions", nf, "--tags", tags, "--derivatives", d]


@pytest.fixture(scope="module")
def generated(real_specs, tmp_path_factory):
    """torch's Functions generated once (absolute --out, from the repo): (folder, the command's result)."""
    a = tmp_path_factory.mktemp("one") / "out"
    r1 = run_generate(*spec_args(*real_specs), "--out", str(a), "--unity", "3")
    assert r1.returncode == 0, r1.stderr
    return a, r1


@pytest.mark.compile
def test_generation_is_byte_identical_in_any_folder(generated, real_specs, torch_counts, tmp_path):
    (a, r1), b = generated, tmp_path / "two"
    b.mkdir()
    # one absolute --out from the repo (the fixture), one relative --out from elsewhere
    r2 = run_generate(*spec_args(*real_specs), "--out", "gen", "--unity", "3", cwd=str(b))
    assert r2.returncode == 0, r2.stderr
    first, second = tree(a), tree(b / "gen")
    assert first == second
    n = torch_counts.functions
    shards = len(binding_units.sources(n - torch_counts.foreach_derived))   # torch binds no derived foreach
    # per-op pairs, preludes + load check + support + umbrella, buckets, the bindings' header and TUs
    assert len(first) == n * 2 + 5 + 3 + 1 + shards + 1 + 1   # + derivative_lines.h, cache_key.cpp
    assert r1.stdout.startswith(f"{a}: {n} Functions: {n} regenerated, 0 unchanged, 0 removed; ")
    assert r1.stdout.endswith(f"; compiled as 3 buckets, Python bindings in {shards} TUs ({shards} rewritten)\n")
    for text in first.values():
        assert str(tmp_path.parent).encode() not in text and REPO.encode() not in text
        assert b"\r" not in text


def _edited(src, dst, old, new):
    with open(src) as f:
        text = f.read()
    assert text.count(old) == 1
    with open(dst, "w") as f:
        f.write(text.replace(old, new))


@pytest.mark.parametrize("old, new, changed", [
    # an entry no foreach op refers to; the edit saves one more value, so
    # the class (header) changes too
    ("Scalar p=2) -> Tensor\n  self: norm_backward(grad, self - other, p, result)\n",
     "Scalar p=2) -> Tensor\n  self: norm_backward(grad, self - other, p, result) * other.dim()\n",
     {"functions/DistBackward0.h", "functions/DistBackward0.cpp"}),
    # mul.Tensor is also the per-element op of _foreach_mul.List/.Tensor; a
    # formula-only edit leaves the classes' headers alone
    ("mul.Tensor(Tensor self, Tensor other) -> Tensor\n  self: mul_tensor_backward(grad, other, ",
     "mul.Tensor(Tensor self, Tensor other) -> Tensor\n  self: mul_tensor_backward(grad, other.conj(), ",
     {"functions/MulBackward0.cpp", "functions/ForeachMulBackward0List.cpp",
      "functions/ForeachMulBackward0Tensor.cpp"}),
])
@pytest.mark.compile
def test_editing_one_entry_rewrites_only_its_functions(generated, real_specs, torch_counts, tmp_path, old, new,
                                                      changed):
    nf, tags, d = real_specs
    out = tmp_path / "out"
    shutil.copytree(generated[0], out)
    before, stamps = tree(out), mtimes(out)
    edited = tmp_path / "derivatives.yaml"
    _edited(d, edited, old, new)
    r = run_generate(*spec_args(nf, tags, str(edited)), "--out", str(out), "--unity", "3", "--jobs", "4",
                     "--override")
    assert r.returncode == 0, r.stderr
    after = tree(out)
    # The edited Functions leave their buckets for the edit TUs (new files).
    # A Function whose header changed takes its bucket's file with it; one
    # whose .cpp alone changed leaves its old text there, to be overridden.
    edited = sorted({p.split("/")[1].split(".")[0] for p in changed if p.endswith(".cpp")})
    headers = {p.split("/")[1].split(".")[0] for p in changed if p.endswith(".h")}
    slots = read_manifest(str(out / MANIFEST))[0].layout.slots   # kept from the first generation
    edit_tus = {f"unity/edited_{slot_of(op, slots)}.cpp" for op in edited}
    changed = changed | {f"unity/bucket_{bucket_of(op, 3)}.cpp" for op in headers}
    # Here a header changes exactly when what the Function saves does: then
    # (only then) its binding TU is rewritten.
    shards = len(binding_units.sources(torch_counts.functions - torch_counts.foreach_derived))
    changed |= {binding_units.shard_file(binding_units.shard_of(op, shards)) for op in headers}
    changed.add("cache_key.cpp")   # the digest of the generated code (codegen/emit/cache_key.py)
    assert {p for p in before if before[p] != after.get(p)} == changed
    assert set(after) == set(before) | edit_tus
    assert {p for p, t in mtimes(out).items() if t != stamps.get(p)} == changed | edit_tus  # nothing else
    n, total = len(edited), torch_counts.functions
    assert r.stdout.startswith(f"{out}: {total} Functions: {n} regenerated, {total - n} unchanged, 0 removed; ")
    assert f"+ {n} unit{'s' if n > 1 else ''} in {len(edit_tus)} edit TU" in r.stdout
    assert f"({', '.join(edited)})" in r.stdout
    assert (f", {n - len(headers)} overriding" in r.stdout) == (n > len(headers))


# ------------------------------------------------------------ unity buckets


def test_unity_bucket_of_a_unit_depends_on_its_name_only():
    units = [Unit(Kind.FUNCTION, f"Op{i}Backward0", f"Op{i}Backward0", None) for i in range(60)]
    text = lambda u: f"int {u.name};\n"  # noqa: E731
    full = render_buckets(units, Layout(5, 5), range(5), text)
    less = render_buckets(units[:17] + units[18:], Layout(5, 5), range(5), text)
    changed = [p for p in full if full[p] != less[p]]
    assert changed == [f"unity/bucket_{bucket_of(units[17].name, 5)}.cpp"]
    drop = lambda text: [x for x in text.splitlines() if x and not x.startswith("// Unity bucket")]  # noqa: E731
    assert [x for x in drop(full[changed[0]]) if units[17].name not in x] == drop(less[changed[0]])


# ------------------------------------------------------------------ writer


def test_writer_rewrites_only_changed_files(tmp_path):
    files = {"functions/A.h": "// @generated a\n", "functions/A.cpp": "// @generated\n", "Functions.h": "x\n"}
    assert write_files(str(tmp_path), files) == sorted(files)
    stamps = mtimes(tmp_path)
    assert write_files(str(tmp_path), dict(files, **{"functions/A.h": "// @generated b\n"})) == ["functions/A.h"]
    assert {p for p, t in mtimes(tmp_path).items() if t != stamps[p]} == {"functions/A.h"}
    assert (tmp_path / "functions" / "A.h").read_text() == "// @generated b\n"


def test_writer_prunes_only_what_is_ours(tmp_path):
    write_files(str(tmp_path), {"functions/A.h": "// @generated\n", "functions/B.h": "// @generated\n",
                                "functions/C.h": "no marker\n", "unity/bucket_1.cpp": "// @generated\n",
                                "Old.h": "// @generated\n"})
    (tmp_path / "functions" / "mine.h").write_text("// hand-written\n")
    (tmp_path / "functions" / "B.os").write_text("object")
    (tmp_path / "functions" / ".B.h.123.tmp").write_text("half")
    (tmp_path / "notes.txt").write_text("keep")
    r = prune(str(tmp_path), ("functions", "unity"), keep={"functions/A.h"}, ours={"functions/C.h"})
    assert r.removed == ["functions/.B.h.123.tmp", "functions/B.h", "functions/B.os", "functions/C.h",
                         "unity/bucket_1.cpp"]
    assert r.foreign == ["functions/mine.h"]
    assert sorted(tree(tmp_path)) == ["Old.h", "functions/A.h", "functions/mine.h", "notes.txt"]


def test_writer_leaves_no_temporaries_and_rejects_escaping_paths(tmp_path):
    write_files(str(tmp_path), {"functions/A.h": "// @generated\n"})
    assert sorted(tree(tmp_path)) == ["functions/A.h"]
    for bad in ("../x.h", "/abs.h", "functions//x.h", "./x.h"):
        with pytest.raises(ValueError):
            write_files(str(tmp_path), {bad: ""})


# --------------------------------------------------------------------- CLI

NATIVE = """\
- func: my_mul(Tensor self, Tensor other) -> Tensor
- func: my_scale(Tensor self, float alpha) -> Tensor
"""
DERIVATIVES = """\
- name: my_mul(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self

- name: my_scale(Tensor self, float alpha) -> Tensor
  self: grad * alpha
"""


def test_cli_reports_and_prunes(tmp_path):
    nf, d = tmp_path / "nf.yaml", tmp_path / "d.yaml"
    nf.write_text(NATIVE)
    d.write_text(DERIVATIVES)
    args = ["--native-functions", str(nf), "--derivatives", str(d), "--out", str(tmp_path / "out")]
    r = run_generate(*args, "--namespace", "my::grads", "--unity", "2", "--include", "my/helpers.h")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"{tmp_path / 'out'}: 2 Functions: 2 regenerated, 0 unchanged, 0 removed; no trusted "
                        "manifest: 2 (MyMulBackward0, MyScaleBackward0); compiled as 2 buckets, "
                        "Python bindings in 1 TU (1 rewritten)\n")
    out = tree(tmp_path / "out")
    assert sorted(out) == ["Functions.h", "cache_key.cpp", "derivative_lines.h", "functions/MyMulBackward0.cpp",
                           "functions/MyMulBackward0.h", "functions/MyScaleBackward0.cpp", "functions/MyScaleBackward0.h",
                           "load_check.h", "prelude.h", "prelude_impl.h", "python/bindings.h",
                           "python/bindings_0.cpp", "support.cpp", "unity/bucket_0.cpp", "unity/bucket_1.cpp"]
    assert b"namespace my::grads {" in out["functions/MyMulBackward0.h"]
    assert b'#include "my/helpers.h"' in out["prelude_impl.h"]
    assert b"TORCH_API" not in out["functions/MyMulBackward0.h"]

    r = run_generate(*args, "--namespace", "my::grads", "--unity", "2", "--include", "my/helpers.h")
    assert r.stdout == (f"{tmp_path / 'out'}: 2 Functions: 0 regenerated, 2 unchanged, 0 removed; inputs "
                        "unchanged (specs not parsed); compiled as 2 buckets, Python bindings in 1 TU\n")

    # one entry fewer, one TU per unit, and no bindings: python/ is pruned
    d.write_text(DERIVATIVES.split("\n\n")[0] + "\n")
    r = run_generate(*args, "--namespace", "my::grads", "--include", "my/helpers.h", "--unity", "0", "--quiet",
                     "--no-python")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{tmp_path / 'out'}: 1 Functions: 0 regenerated, 1 unchanged, 1 removed; ")
    assert r.stdout.endswith("compiled as 1 TU, one per unit (unity=0)\n")
    assert r.stderr == ""
    assert sorted(tree(tmp_path / "out")) == ["Functions.h", "cache_key.cpp", "derivative_lines.h",
                                               "functions/MyMulBackward0.cpp",
                                               "functions/MyMulBackward0.h", "load_check.h", "prelude.h",
                                               "prelude_impl.h", "support.cpp"]


def test_cli_spec_error_is_one_line(tmp_path):
    nf, d = tmp_path / "nf.yaml", tmp_path / "d.yaml"
    nf.write_text(NATIVE)
    d.write_text(DERIVATIVES.replace("self: grad * alpha", "bogus: grad * alpha"))
    r = run_generate("--native-functions", str(nf), "--derivatives", str(d), "--out", str(tmp_path / "o"))
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ")
    assert sorted(tree(tmp_path / "o")) == []  # nothing generated (only the folder's lock)


@pytest.mark.parametrize("kw", [dict(namespace="a b"), dict(namespace="::a"), dict(namespace="a::"),
                                dict(namespace="torch::autograd::generated"),
                                dict(includes=("",)), dict(includes=("a.h\n#define X",))])
def test_bad_options_fail_early(kw):
    with pytest.raises(ValueError):
        EmitOptions(**kw)


def test_cli_bad_namespace_is_one_line(tmp_path):
    r = run_generate("--native-functions", "nf.yaml", "--derivatives", "d.yaml", "--out", str(tmp_path / "o"),
                     "--namespace", "torch::autograd::generated")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "libtorch's own" in r.stderr
    assert not (tmp_path / "o").exists()
