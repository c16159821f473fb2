"""site_scons/autograd_scons/tool/weaken.py with the real binutils, on objects made by `ld -r -b
binary` (each data file `x` gives strong symbols `_binary_x_start` and
`_binary_x_end`), so no compiler runs: the weakened copy lets the edit's
definitions win, and any other duplicate still fails the link."""

import os
import subprocess
import sys

import pytest

from autograd_scons.tool.weaken import WeakenError, strong_symbols, weaken
from support.spec_facts import REPO


def obj(folder, name, *data):
    """An object defining the `_binary_<d>_*` symbols of each data file `d`."""
    for d in data:
        (folder / d).write_text(d)
    out = str(folder / name)
    subprocess.run(["ld", "-r", "-b", "binary", "-o", out, *data], cwd=folder, check=True)
    return out


def link(folder, *objects):
    return subprocess.run(["ld", "-r", "-o", str(folder / "linked.o"), *objects], capture_output=True, text=True)


@pytest.fixture
def objects(tmp_path):
    """A bucket holding the old text of `edited` and the text of `other`, and
    an edit TU holding the new text of `edited`."""
    return (obj(tmp_path, "bucket.o", "edited", "other"), obj(tmp_path, "edit.o", "edited"))


def test_the_edits_symbols_are_weak_in_the_copy_and_nothing_else(tmp_path, objects):
    bucket, edit = objects
    assert link(tmp_path, edit, bucket).returncode != 0   # as it stands: defined twice
    names = weaken(bucket, [edit], str(tmp_path / "bucket.weak.o"))
    assert names == ["_binary_edited_end", "_binary_edited_start"]
    assert strong_symbols(str(tmp_path / "bucket.weak.o")) == {"_binary_other_end", "_binary_other_start"}
    assert strong_symbols(bucket) >= set(names)   # the bucket's own object is left as it was
    assert link(tmp_path, edit, str(tmp_path / "bucket.weak.o")).returncode == 0


def test_a_duplicate_elsewhere_still_fails_the_link(tmp_path, objects):
    bucket, edit = objects
    weaken(bucket, [edit], str(tmp_path / "bucket.weak.o"))
    (tmp_path / "user").mkdir()
    dup = obj(tmp_path / "user", "dup.o", "other")   # the user's own definition of `other`'s symbols
    proc = link(tmp_path, edit, str(tmp_path / "bucket.weak.o"), dup)
    assert proc.returncode != 0 and "multiple definition of `_binary_other_start'" in proc.stderr, proc.stderr


def test_a_non_elf_object_is_refused_and_nothing_is_written(tmp_path, objects):
    bucket, _ = objects
    fake = tmp_path / "fake.o"
    fake.write_text("not an object\n")
    with pytest.raises(WeakenError, match="not an ELF object"):
        weaken(bucket, [str(fake)], str(tmp_path / "out.o"))
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == []


def test_the_command_line(tmp_path, objects):
    bucket, edit = objects
    proc = subprocess.run([sys.executable, "-m", "autograd_scons", "weaken", bucket, edit, "-o", str(tmp_path / "w.o")],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{tmp_path / 'w.o'}: 2 symbols of {bucket} made weak\n"
    assert os.path.exists(tmp_path / "w.o")


def test_nothing_in_common_is_a_plain_copy(tmp_path, objects):
    bucket, _ = objects
    unrelated = obj(tmp_path, "unrelated.o", "third")
    assert weaken(bucket, [unrelated], str(tmp_path / "copy.o")) == []
    assert (tmp_path / "copy.o").read_bytes() == open(bucket, "rb").read()
