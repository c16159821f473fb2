"""The backend writes every [project] field that core metadata defines, or
refuses it in one line (site_scons/autograd_scons/ship/metadata.py, issue 35): the result
is read back with `packaging`'s metadata parser, field by field."""

import pytest
from packaging.metadata import Metadata

from autograd_scons import build_meta
from autograd_scons.buildenv.runner import BuildError
from autograd_scons.ship import metadata

PROJECT = {
    "name": "demo-ops", "version": "1.2.0", "description": "Demo ops",
    "readme": "README.md", "requires-python": ">=3.10",
    "license": {"text": "Line one\nLine two"},
    "authors": [{"name": "Ada", "email": "ada@example.org"}, {"name": "Bob"}],
    "maintainers": [{"email": "team@example.org"}],
    "keywords": ["autograd", "torch"],
    "classifiers": ["Programming Language :: Python :: 3", "License :: OSI Approved :: MIT License"],
    "urls": {"Homepage": "https://example.org", "Source": "https://example.org/src"},
    "dependencies": ["numpy>=1"],
    "optional-dependencies": {"Test_Tools": ["pytest>=8", "hypothesis; python_version >= '3.11'"]},
    "scripts": {"demo": "demo_ops.cli:main"},
    "gui-scripts": {"demo-gui": "demo_ops.gui:main"},
    "entry-points": {"demo.plugins": {"one": "demo_ops.plugins:one"}},
}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "README.md").write_text("# Demo\n\nSome *markdown*.\n")
    return str(tmp_path)


def test_every_field_is_written_and_reads_back(project):
    meta = dict(PROJECT)
    metadata.check(meta, project, "pyproject.toml")
    text = metadata.metadata_text(meta, ["numpy>=1", "torch==2.13.*"], project)
    m = Metadata.from_email(text, validate=True)
    assert (m.name, str(m.version), m.summary) == ("demo-ops", "1.2.0", "Demo ops")
    assert m.description == "# Demo\n\nSome *markdown*.\n" and m.description_content_type == "text/markdown"
    assert str(m.requires_python) == ">=3.10"
    assert m.license.splitlines()[0] == "Line one" and m.license.splitlines()[-1].strip() == "Line two"
    assert m.author == "Bob" and m.author_email == "Ada <ada@example.org>"
    assert m.maintainer_email == "team@example.org"
    assert m.keywords == ["autograd", "torch"]
    assert m.classifiers == PROJECT["classifiers"]
    assert m.project_urls == PROJECT["urls"]
    assert [str(r) for r in m.requires_dist] == [
        "numpy>=1", "torch==2.13.*", 'pytest>=8; extra == "test-tools"',
        'hypothesis; python_version >= "3.11" and extra == "test-tools"']
    assert m.provides_extra == ["test-tools"]
    entry_points = metadata.entry_points_text(meta)
    assert "[console_scripts]\ndemo = demo_ops.cli:main\n" in entry_points
    assert "[gui_scripts]\ndemo-gui = demo_ops.gui:main\n" in entry_points
    assert "[demo.plugins]\none = demo_ops.plugins:one\n" in entry_points


def test_an_spdx_license_is_a_license_expression(project):
    meta = {"name": "demo-ops", "version": "1.0", "license": "MIT OR Apache-2.0"}
    metadata.check(meta, project, "pyproject.toml")
    m = Metadata.from_email(metadata.metadata_text(meta, [], project), validate=True)
    assert str(m.license_expression) == "MIT OR Apache-2.0"


@pytest.mark.parametrize("field, value, words", [
    ("dynamic", ["version"], "[project] dynamic is not supported"),
    ("license-files", ["LICENSE"], "[project] license-files is not supported"),
    ("import-names", ["demo"], "[project] import-names is not supported"),
    ("readme", "../outside.md", "readme file '../outside.md' is not a file inside the project"),
    ("readme", "MISSING.md", "readme file 'MISSING.md'"),
    ("keywords", "not a list", "keywords must be a list of one-line strings"),
    ("urls", {"Home": "a\nb"}, "urls must be a table of one-line strings"),
    ("entry-points", {"console_scripts": {"x": "a:b"}}, "may not hold console_scripts"),
    ("optional-dependencies", {"bad extra!": ["x"]}, "not a valid extra name"),
])
def test_a_field_it_cannot_write_is_one_line_never_dropped(project, field, value, words):
    with open(f"{project}/pyproject.toml", "w") as f:
        f.write('[project]\nname = "demo-ops"\nversion = "1.0"\n')
    import tomllib
    with open(f"{project}/pyproject.toml", "rb") as f:
        data = tomllib.load(f)
    data["project"][field] = value
    with pytest.raises(BuildError) as e:
        metadata.check(data["project"], project, f"{project}/pyproject.toml")
    assert "\n" not in str(e.value) and words in str(e.value), str(e.value)


def test_the_backend_checks_the_fields_before_writing(project, monkeypatch):
    with open(f"{project}/pyproject.toml", "w") as f:
        f.write('[project]\nname = "demo-ops"\nversion = "1.0"\ndynamic = ["readme"]\n')
    with pytest.raises(BuildError, match=r"\[project\] dynamic is not supported"):
        build_meta._project_config(project)


def test_metadata_is_utf8_whatever_the_locale(project, tmp_path):
    """pip's metadata step under a locale whose encoding is ASCII (LANG=C
    without Python's UTF-8 coercion): a README in another script is written
    as UTF-8, as the wheel's METADATA is (issue 44, bug 2: it was written in
    the locale's encoding, a UnicodeEncodeError)."""
    import subprocess
    import sys
    from support import ship_helpers as ship
    readme = "# Démo\n\nΔ: the gradient, 勾配.\n"
    with open(f"{project}/README.md", "w", encoding="utf-8") as f:
        f.write(readme)
    with open(f"{project}/pyproject.toml", "w", encoding="utf-8") as f:
        f.write('[project]\nname = "demo-ops"\nversion = "1.0"\nreadme = "README.md"\n')
    out = tmp_path / "meta"
    code = ("import locale, sys\nfrom autograd_scons import build_meta\n"
            "build_meta._check_torch = lambda data, cache_dir: '2.13.0'  # (no torch import: the write is checked)\n"
            "print(locale.getpreferredencoding(False))\n"
            "print(build_meta.prepare_metadata_for_build_wheel(sys.argv[1]))\n")
    env = ship.environ(ship.this_checkout(tmp_path), LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], cwd=project, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    encoding, folder = proc.stdout.split()
    assert encoding.lower() in ("ansi_x3.4-1968", "ascii", "us-ascii"), encoding   # the test's premise
    m = Metadata.from_email((out / folder / "METADATA").read_bytes(), validate=True)
    assert m.description == readme
