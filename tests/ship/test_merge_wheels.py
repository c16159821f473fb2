"""`python -m autograd_scons merge-wheels` (docs/shipping.md, "Several torch
versions in one wheel"), with the stand-in compiler: one variant wheel is
built by the backend (`new` + pip wheel) under this torch; the others are
that wheel with its variant record, torch pin and library bytes changed,
as the backend would write them under another torch.  Checked: the merged
wheel's exact files and RECORD, the Requires-Dist span (with packaging),
differing Python files or a repeated variant as one error line with
nothing written, the same bytes from a second merge, and the package's
loader: which variant it picks for the running torch (its
torch.ops.load_library replaced by a print), and the one-line ImportError
when none fits; auditwheel's tag on the stand-in's library."""

import base64
import hashlib
import json
import os
import sys
import zipfile

import pytest
from packaging.specifiers import SpecifierSet

from support import forked
from support import ship_helpers as ship

pytestmark = pytest.mark.slow  # pip and SCons subprocesses; no compiler

NAME = "merge_ops"
INFO = f"{NAME}-0.1.0.dist-info"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """(tmp, PYTHONPATH, the backend's wheel, its variant record, this torch's (major, minor))."""
    tmp = tmp_path_factory.mktemp("merge")
    path = ship.this_checkout(tmp)
    _, wheel, _ = ship.new_wheel(tmp, NAME, path, f"CXX={ship.FAKE_CXX}")
    record = json.loads(ship.wheel_read(wheel, f"{INFO}/{'autograd_scons.json'}"))
    major, minor = (int(x) for x in record["torch"].split("+")[0].split(".")[:2])
    return tmp, path, wheel, record, (major, minor)


def variant_wheel(base, folder, major, minor, cuda=None, edit=None, record_edit=None):
    """The backend's wheel as it would be under torch major.minor (CUDA `cuda`):
    its record, pin and library bytes changed; `edit`: {member: bytes} more;
    `record_edit`: {key: value} of its variant record."""
    from autograd_scons.ship import variant, wheel_files
    tmp, _, wheel, record, _ = base
    with zipfile.ZipFile(wheel) as z:
        files = {n: z.read(n) for n in z.namelist()}
    name = variant.variant_name(f"{major}.{minor}.0", cuda)
    torch_pin = f"Requires-Dist: torch=={record['torch'].split('.')[0]}.{record['torch'].split('.')[1]}.*"
    meta = files.pop(f"{INFO}/METADATA").decode()
    assert torch_pin in meta.splitlines()
    dist_info = {"METADATA": meta.replace(torch_pin, f"Requires-Dist: torch=={major}.{minor}.*"),
                 "WHEEL": files.pop(f"{INFO}/WHEEL").decode(),
                 "autograd_scons.json": json.dumps(dict(record, variant=name, torch=f"{major}.{minor}.0",
                                                        torch_cuda=cuda) | (record_edit or {}),
                                                   sort_keys=True, indent=1) + "\n"}
    files = {n: d for n, d in files.items() if not n.startswith(INFO)}
    files[record["library"]] += f"\0{name}".encode()  # each variant's own bytes
    files.update(edit or {})
    out = os.path.join(str(tmp), folder)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, os.path.basename(wheel))
    wheel_files.write_wheel(path, files, dist_info)
    return path, name


def merge(base, outdir, *wheels, check=True):
    os.makedirs(outdir, exist_ok=True)
    return ship.run([sys.executable, "-m", "autograd_scons", "merge-wheels", "--plat", "linux", "-o", outdir,
                     *wheels], base[0], ship.environ(base[1]), check=check)


@pytest.fixture(scope="module")
def merged(base):
    """(merged wheel, {variant: its input wheel}, the carried minors) of this torch's
    CPU wheel, the next minor's CUDA 13.0 one and a CPU one two minors on (a gap)."""
    tmp, (major, minor) = base[0], base[4]
    inputs = {base[3]["variant"]: base[2]}
    for folder, m, cuda in (("next", minor + 1, "13.0"), ("gap", minor + 3, None)):
        path, name = variant_wheel(base, folder, major, m, cuda)
        inputs[name] = path
    proc = merge(base, str(tmp / "out"), *inputs.values())
    [path] = proc.stdout.split()
    return path, inputs, [(major, minor), (major, minor + 1), (major, minor + 3)]


def _digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_the_merged_wheel_holds_each_variants_library_and_the_python_files_once(merged):
    path, inputs, _ = merged
    assert os.path.basename(path) == os.path.basename(next(iter(inputs.values())))  # --plat linux: the same tag
    libraries = [f"{NAME}/_C/{v}.so" for v in inputs]
    assert ship.wheel_names(path) == sorted([f"{NAME}/__init__.py", *libraries, f"{INFO}/METADATA", f"{INFO}/WHEEL",
                                             f"{INFO}/autograd_scons.json", f"{INFO}/RECORD"])
    for name, wheel in inputs.items():
        assert ship.wheel_read(path, f"{NAME}/_C/{name}.so") == ship.wheel_read(wheel, f"{NAME}/_C.so")
    record = ship.wheel_read(path, f"{INFO}/RECORD").decode().splitlines()
    expected = [f"{n},sha256={_digest(ship.wheel_read(path, n))},{len(ship.wheel_read(path, n))}"
                for n in ship.wheel_names(path) if n != f"{INFO}/RECORD"]
    assert sorted(record) == sorted(expected + [f"{INFO}/RECORD,,"])
    carried = json.loads(ship.wheel_read(path, f"{INFO}/autograd_scons.json"))["variants"]
    assert sorted(carried) == sorted(inputs) and all(carried[v]["library"] == f"{NAME}/_C/{v}.so" for v in inputs)


def test_requires_dist_spans_exactly_the_carried_minors(merged):
    path, _, minors = merged
    metadata = ship.wheel_read(path, f"{INFO}/METADATA").decode().splitlines()
    [torch_req] = [line.split(": ", 1)[1] for line in metadata if line.startswith("Requires-Dist: torch")]
    spec = SpecifierSet(torch_req[len("torch"):])
    major, low = minors[0]
    for m in range(max(0, low - 2), minors[-1][1] + 3):
        for version in (f"{major}.{m}.0", f"{major}.{m}.1+cu130", f"{major}.{m}.0+cpu"):
            assert spec.contains(version) == ((major, m) in minors), (torch_req, version)
    assert not spec.contains(f"{major + 1}.{low}.0")


def test_merging_again_gives_the_same_bytes_whatever_the_order(merged, base):
    path, inputs, _ = merged
    again = merge(base, str(base[0] / "again"), *reversed(list(inputs.values()))).stdout.split()[0]
    with open(path, "rb") as a, open(again, "rb") as b:
        assert a.read() == b.read()


def _one_error(proc, outdir):
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("autograd_scons merge-wheels: error: "), proc.stderr
    assert os.listdir(outdir) == []  # nothing written, not even a temporary file
    return lines[0]


def test_differing_python_files_are_one_error_writing_nothing(base):
    major, minor = base[4]
    edited, _ = variant_wheel(base, "edited", major, minor + 1, "13.0",
                              edit={f"{NAME}/__init__.py": b"# another source\n"})
    outdir = str(base[0] / "out-differ")
    line = _one_error(merge(base, outdir, base[2], edited, check=False), outdir)
    assert f"{NAME}/__init__.py differs between " in line and edited in line
    extra, _ = variant_wheel(base, "extra", major, minor + 1, "13.0", edit={f"{NAME}/more.py": b"x = 1\n"})
    line = _one_error(merge(base, outdir, base[2], extra, check=False), outdir)
    assert f"{NAME}/more.py is in {extra} but not in {base[2]}" in line


def test_a_repeated_variant_or_a_file_that_is_no_variant_wheel_is_one_error(base):
    major, minor = base[4]
    same, name = variant_wheel(base, "same", major, minor)
    outdir = str(base[0] / "out-bad")
    assert f"are both the variant {name}" in _one_error(merge(base, outdir, base[2], same, check=False), outdir)
    not_zip = str(base[0] / "bad" / os.path.basename(base[2]))
    os.makedirs(os.path.dirname(not_zip))
    with open(not_zip, "w") as f:
        f.write("not a zip")
    assert "cannot read the wheel" in _one_error(merge(base, outdir, base[2], not_zip, check=False), outdir)


def test_a_variant_wheel_naming_paths_outside_the_wheel_is_one_error(base):
    major, minor = base[4]
    outdir = str(base[0] / "out-escape")
    os.makedirs(outdir)
    for i, (edit, record, words) in enumerate((
            ({}, {"variant": "../../escape"}, "names no variant such as torch2.13_cpu"),
            ({f"../{NAME}/x.py": b""}, {}, f"member '../{NAME}/x.py' is not a normalized relative path"),
            ({}, {"library": f"{INFO}/METADATA"}, "names no library in the wheel"))):
        path, _ = variant_wheel(base, f"escape{i}", major, minor + 1, edit=edit, record_edit=record)
        assert words in _one_error(merge(base, outdir, base[2], path, check=False), outdir)


@pytest.mark.compile
def test_the_default_tag_is_the_one_auditwheel_reports_and_a_library_it_cannot_read_is_one_error(base):
    # the stand-in compiler's library is a small ELF file that links nothing
    outdir = str(base[0] / "out-auto")
    os.makedirs(outdir)
    cmd = [sys.executable, "-m", "autograd_scons", "merge-wheels", "-o", outdir]
    [path] = ship.run(cmd + [base[2]], base[0], ship.environ(base[1])).stdout.split()
    report = json.loads(ship.run([sys.executable, "-m", "auditwheel", "show", "--json", path], base[0],
                                 ship.environ("")).stdout)
    assert report["sym_tag"].startswith("manylinux_")
    assert os.path.basename(path).endswith(f"-{report['sym_tag']}.whl")
    assert f"Tag: cp{sys.version_info[0]}{sys.version_info[1]}-cp{sys.version_info[0]}{sys.version_info[1]}-" \
        f"{report['sym_tag']}" in ship.wheel_read(path, f"{INFO}/WHEEL").decode().splitlines()
    os.unlink(path)
    other = "manylinux_2_17_x86_64" if report["sym_tag"] != "manylinux_2_17_x86_64" else "manylinux_2_28_x86_64"
    proc = ship.run(cmd + ["--plat", other, base[2]], base[0], ship.environ(base[1]), check=False)
    assert f"--plat {other}: auditwheel says the libraries need {report['sym_tag']}" in _one_error(proc, outdir)
    major, minor = base[4]
    not_elf, _ = variant_wheel(base, "not-elf", major, minor + 1, edit={f"{NAME}/_C.so": b"not a library"})
    proc = ship.run(cmd + [base[2], not_elf], base[0], ship.environ(base[1]), check=False)
    assert f"{NAME}/_C/torch{major}.{minor + 1}_cpu.so is not an ELF shared library" in _one_error(proc, outdir)


def _import(site, base, fake_cuda=None, fake_hip=None):
    """Import the package from `site` with torch.ops.load_library printing
    the library it is given (a stand-in library cannot be loaded), and
    torch.version saying CUDA `fake_cuda` or ROCm `fake_hip`."""
    fake = f"torch.version.cuda = {fake_cuda!r}\ntorch.version.hip = {fake_hip!r}\n"
    code = f"import torch\n{fake}torch.ops.load_library = lambda p: print('LOAD', p)\nimport {NAME}\n"
    far = base[0] / "far" / "away"
    os.makedirs(far, exist_ok=True)
    # forked from a process that has imported torch (support/forked.py): the
    # import under test is the package's, and torch's ~2 s would be paid five times
    return forked.run(code, [], ship.environ(str(site)), cwd=str(far))


def _installed(path, site):
    with zipfile.ZipFile(path) as z:
        z.extractall(site)
    return site


@pytest.mark.compile
def test_the_loader_picks_the_running_torchs_minor_and_build(merged, base):
    path, inputs, _ = merged
    major, minor = base[4]
    site = _installed(path, base[0] / "site-all")
    cpu = f"torch{major}.{minor}_cpu"
    # this torch's CPU variant, and with a CUDA variant of this minor beside it, still the CPU one
    both, cu = variant_wheel(base, "same-minor-cuda", major, minor, "13.0")
    site2 = _installed(merge(base, str(base[0] / "out-both"), base[2], both).stdout.split()[0], base[0] / "site2")
    for where in (site, site2):
        proc = _import(where, base)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["LOAD", os.path.join(str(where), NAME, "_C", f"{cpu}.so")]
    proc = _import(site2, base, fake_cuda="13.0")  # a CUDA 13 torch of this minor: its CUDA variant
    assert proc.stdout.split() == ["LOAD", os.path.join(str(site2), NAME, "_C", f"{cu}.so")], proc.stderr
    proc = _import(site2, base, fake_cuda="12.8")  # another CUDA major: neither
    assert proc.returncode != 0 and "LOAD" not in proc.stdout and "(cu128)" in proc.stderr, proc.stderr
    proc = _import(site2, base, fake_hip="6.2")  # a ROCm torch: not the CPU variant
    assert proc.returncode != 0 and "LOAD" not in proc.stdout and "(rocm6.2)" in proc.stderr, proc.stderr


def test_one_variant_merged_alone_requires_its_own_minor(base):
    path = merge(base, str(base[0] / "out-one"), base[2]).stdout.split()[0]
    major, minor = base[4]
    metadata = ship.wheel_read(path, f"{INFO}/METADATA").decode().splitlines()
    assert [x for x in metadata if x.startswith("Requires-Dist: torch")] == [f"Requires-Dist: torch=={major}.{minor}.*"]
    assert ship.wheel_read(path, f"{NAME}/_C/{base[3]['variant']}.so") == ship.wheel_read(base[2], f"{NAME}/_C.so")


def test_new_writes_the_torch_span_given_and_refuses_an_unreadable_one(base):
    where = base[0] / "spans"
    os.makedirs(where)
    ship.new(where, "pinned_ops", base[1], "--torch", "==2.13.*")
    with open(where / "pinned_ops" / "pyproject.toml") as f:
        assert 'requires = ["autograd-functions-scons", "torch==2.13.*"]' in f.read()
    proc = ship.new(where, "bad_ops", base[1], "--torch", "~=2.13", check=False)
    assert proc.returncode != 0 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert proc.stderr.startswith("autograd_scons new: --torch: ") and "'~=2.13'" in proc.stderr
    assert sorted(os.listdir(where)) == ["pinned_ops"]  # nothing written, not even the temporary folder


@pytest.mark.compile
def test_no_variant_for_the_running_torch_is_a_one_line_import_error(base):
    major, minor = base[4]
    others = [variant_wheel(base, f"other{m}", major, m, cuda) for m, cuda in ((minor + 1, None), (minor, "13.0"))]
    path = merge(base, str(base[0] / "out-others"), *[p for p, _ in others]).stdout.split()[0]
    site = _installed(path, base[0] / "site-others")
    proc = _import(site, base)
    import torch
    assert proc.returncode != 0 and "LOAD" not in proc.stdout
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("ImportError")]
    carried = ", ".join(sorted(n for _, n in others))
    assert line == (f"ImportError: {NAME}: no library for torch {torch.__version__} (cpu) among those this "
                    f"package carries: {carried} (install a torch one of them was built for, or build {NAME} "
                    "from source)")


def test_a_missing_output_folder_is_made_as_pip_wheel_w_makes_it(base):
    """`-o DIR` that does not exist yet is created, parents too (issue 44,
    bug 5: it was refused); inputs refused before anything is written leave
    no folder behind."""
    cmd = [sys.executable, "-m", "autograd_scons", "merge-wheels", "--plat", "linux", "-o"]
    outdir = base[0] / "missing" / "deeper"
    [path] = ship.run(cmd + [outdir, base[2]], base[0], ship.environ(base[1])).stdout.split()
    assert os.path.dirname(path) == str(outdir) and os.listdir(outdir) == [os.path.basename(path)]
    refused = base[0] / "refused" / "deeper"
    proc = ship.run(cmd + [refused, base[2], base[2]], base[0], ship.environ(base[1]), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert not os.path.exists(base[0] / "refused")
