"""What a project hands the build backend (pyproject.toml's name, version and
metadata, its files, its folder's path) and `new` its name: each is checked
before anything is written, and none of it can make the backend write
outside the folders pip gives it, pack a file from outside the project, or
run code.

- a hostile `[project] name` or `version`, or a metadata field with a line
  break, is one line naming pyproject.toml and the field, from every hook,
  and nothing appears anywhere (not in the output folder, not beside it);
  without `packaging`, only PEP 440's canonical spelling is a version;
- the names of the dist-info folder and the sdist come from the normalized
  name and the canonical version;
- an sdist's members are relative paths under NAME-VERSION/, and the
  archive writer refuses any other; a symlink in the project pointing
  outside it is refused in one line naming it, by the sdist and for the
  wheel's Python files; one pointing inside is packed as its content;
- the editable wheel's hook is constant source: the project's path reaches
  the finder as data, exactly, whatever it holds, and runs nothing;
- `new` refuses names that shadow torch's modules, this tool's, or the
  standard library's, and names over 100 characters, in one line, writing
  nothing.

Fast: the hooks refuse before any build, so no compiler runs; each case is
one short process, with this checkout's autograd_scons first on its path,
forked from one that imported the standard modules the backend imports
(support/forked.py: `packaging` and the backend itself are imported by each).
"""

import json
import os
import sys
import tarfile

import pytest

from support import forked
from support import ship_helpers as ship


HOOK = "import sys; from autograd_scons import build_meta; print(getattr(build_meta, sys.argv[1])(sys.argv[2]))"
# The same, with `packaging` unimportable: the backend's own PEP 440 check.
HOOK_NO_PACKAGING = "import sys; sys.modules['packaging'] = None; " + HOOK


def _tree(root):
    """Every path under `root` (files, folders, links), relative, sorted."""
    found = []
    for folder, subdirs, names in os.walk(root):
        found += [os.path.relpath(os.path.join(folder, n), root) for n in subdirs + names]
    return sorted(found)


def _project(root, name="demo_ops", version="0.1.0", more=""):
    """A tiny project at root/project: pyproject.toml (`more`: more lines
    of its [project]) and one source file.  (A JSON string is a TOML basic
    string: the values go in verbatim.)"""
    project = os.path.join(root, "project")
    os.makedirs(os.path.join(project, "csrc"))
    with open(os.path.join(project, "pyproject.toml"), "w") as f:
        f.write('[build-system]\nrequires = []\nbuild-backend = "autograd_scons.build_meta"\n\n'
                f"[project]\nname = {json.dumps(name)}\nversion = {json.dumps(version)}\n{more}")
    with open(os.path.join(project, "csrc", "kernels.cpp"), "w") as f:
        f.write("// kernels\n")
    return project


# The standard modules the backend imports (none of this repository's, nor
# `packaging`: HOOK_NO_PACKAGING makes it unimportable in the child).
_PRELOAD = "ast,base64,dataclasses,gzip,hashlib,inspect,json,subprocess,sysconfig,tarfile,tokenize,xxhash"


def _hook(project, hook, out, pythonpath, code=HOOK):
    os.makedirs(out, exist_ok=True)
    return forked.run(code, [hook, out], ship.environ(pythonpath), cwd=str(project), preload=_PRELOAD)


def _one_line_error(proc):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith("autograd_scons: error: "), proc.stderr
    return line


@pytest.fixture(scope="module")
def pythonpath(tmp_path_factory):
    return ship.this_checkout(tmp_path_factory.mktemp("pythonpath"))


HOOKS = ["build_sdist", "prepare_metadata_for_build_wheel", "build_wheel", "build_editable"]
# /proc/self/cwd: an absolute path that the file-name escaping leaves as it
# is, and that lands in the hook's working folder (the project), not in /.
HOSTILE = [("name", "/proc/self/cwd/escaped"), ("name", "../../escaped"), ("name", "ok\n"),
           ("name", "\u212aelvin"),  # the Kelvin sign: [A-Z] with IGNORECASE would take it
           ("version", "0/../../X"), ("version", "/proc/self/cwd/v")]


@pytest.mark.parametrize("hook", HOOKS)
@pytest.mark.parametrize("field,value", HOSTILE)
def test_a_hostile_name_or_version_is_one_line_and_writes_nothing_anywhere(tmp_path, pythonpath, hook, field,
                                                                           value):
    root = tmp_path / "world"
    project = _project(str(root), **{field: value})
    before = _tree(tmp_path)
    proc = _hook(project, hook, str(root / "out"), pythonpath)
    line = _one_line_error(proc)
    assert "pyproject.toml" in line and f"[project] {field}" in line, line
    assert _tree(tmp_path) == sorted(before + ["world/out"])  # out/ itself the test made, and it is empty


@pytest.mark.parametrize("more", ['description = "ok\\nRequires-Dist: evil"\n',
                                  'dependencies = ["numpy\\nRequires-Dist: evil"]\n'])
def test_a_metadata_field_with_a_line_break_is_one_line_and_writes_nothing(tmp_path, pythonpath, more):
    # each is a line of METADATA / PKG-INFO: a line break would add a field
    project = _project(str(tmp_path), more=more)
    for hook in ("prepare_metadata_for_build_wheel", "build_sdist"):
        proc = _hook(project, hook, str(tmp_path / "out"), pythonpath)
        assert "[project] " + more.split(" ")[0] in _one_line_error(proc)
        assert os.listdir(tmp_path / "out") == []


@pytest.mark.compile
def test_without_packaging_the_version_must_be_pep_440_canonical(tmp_path, pythonpath):
    for n, (version, ok) in enumerate([("1.0.0b1", True), ("2!1.0.post3.dev0+local.7", True), ("1.0.0-beta1", False),
                                       ("0/../../X", False), ("1.0\n", False), ("1.0 ", False)]):
        project = _project(str(tmp_path / str(n)), version=version)
        out = str(tmp_path / str(n) / "out")
        proc = _hook(project, "build_sdist", out, pythonpath, code=HOOK_NO_PACKAGING)
        if ok:
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout.strip() == f"demo_ops-{version}.tar.gz"
        else:
            assert "[project] version" in _one_line_error(proc), version
            assert os.listdir(out) == [], version


def test_dist_info_and_sdist_names_are_the_normalized_name_and_version(tmp_path, pythonpath):
    pytest.importorskip("packaging")  # the backend normalizes a version with it when it is there
    project = _project(str(tmp_path), name="My.Odd-_-Name", version="1.0.0-Beta1")
    out = str(tmp_path / "out")
    proc = _hook(project, "prepare_metadata_for_build_wheel", out, pythonpath)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "my_odd_name-1.0.0b1.dist-info"
    with open(os.path.join(out, "my_odd_name-1.0.0b1.dist-info", "METADATA")) as f:
        metadata = f.read().splitlines()
    assert "Name: My.Odd-_-Name" in metadata and "Version: 1.0.0b1" in metadata
    proc = _hook(project, "build_sdist", out, pythonpath)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "my_odd_name-1.0.0b1.tar.gz"
    with tarfile.open(os.path.join(out, "my_odd_name-1.0.0b1.tar.gz")) as tar:
        names = tar.getnames()
    assert sorted(names) == ["my_odd_name-1.0.0b1/PKG-INFO", "my_odd_name-1.0.0b1/csrc/kernels.cpp",
                             "my_odd_name-1.0.0b1/pyproject.toml"]
    assert sorted(os.listdir(out)) == ["my_odd_name-1.0.0b1.dist-info", "my_odd_name-1.0.0b1.tar.gz"]


@pytest.mark.parametrize("root,rel", [("../x-1", "a.txt"), ("/abs/x-1", "a.txt"), ("x-1", "../../a.txt"),
                                      ("x-1", "/etc/a.txt"), ("x-1", "csrc/../../a.txt"), ("x-1", "./a.txt")])
def test_the_sdist_writer_refuses_a_member_outside_its_root(tmp_path, root, rel):
    from autograd_scons.ship import wheel_files
    disk = tmp_path / "a.txt"
    disk.write_text("a\n")
    with pytest.raises(ValueError):
        wheel_files.write_sdist(str(tmp_path / "out.tar.gz"), root, [(rel, str(disk))], "Name: x\n")
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_symlink_out_of_the_project_is_refused_one_inside_is_packed_as_its_content(tmp_path, pythonpath,
                                                                                     kind):
    project = _project(str(tmp_path))
    secret = tmp_path / ("secret.txt" if kind == "file" else "secrets")
    if kind == "file":
        secret.write_text("not for the sdist\n")
    else:
        secret.mkdir()
        (secret / "key.txt").write_text("not for the sdist\n")
    os.symlink(os.path.join("..", "..", secret.name), os.path.join(project, "csrc", "leak"))
    os.symlink("kernels.cpp", os.path.join(project, "csrc", "alias.cpp"))
    out = str(tmp_path / "out")
    proc = _hook(project, "build_sdist", out, pythonpath)
    line = _one_line_error(proc)
    assert "csrc/leak" in line and "outside the project" in line, line
    assert os.listdir(out) == []
    os.unlink(os.path.join(project, "csrc", "leak"))
    proc = _hook(project, "build_sdist", out, pythonpath)
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(os.path.join(out, proc.stdout.strip())) as tar:
        alias = tar.getmember("demo_ops-0.1.0/csrc/alias.cpp")
        assert alias.isfile() and tar.extractfile(alias).read() == b"// kernels\n"


# A path part that would run a command (in the working folder) if the path
# were ever pasted into Python source; and with it, parts that escape badly
# in a string literal (a syntax error: it would break every interpreter
# start), end one, are format fields, or that JSON spells otherwise than Python.
PLANT = "q\"\"\"+__import__('os').system('touch PWNED')+\"\"\""
ODD_PARTS = [PLANT, "back\\slash \\x4 \\N 'single' {} {project}", "new\nline", "astral \U0001F600"]


@pytest.mark.parametrize("parts", [[PLANT], ODD_PARTS], ids=["planted", "odd"])
def test_the_editable_hook_is_data_and_installs_exactly_the_projects_path(tmp_path, pythonpath, parts):
    project = os.path.join(str(tmp_path), *parts)
    build = os.path.join("build", "cp3-x")
    args = ['CXX=g++ -DX="\\"y\\""', "PCH=0"]
    os.makedirs(os.path.join(project, build))
    with open(os.path.join(project, build, ".build_inputs.json"), "w") as f:  # what write_stamp reads
        json.dump({"algorithm": "md5", "inputs": []}, f)
    with open(os.path.join(project, build, "wheel.json"), "w") as f:   # and the library the build made
        json.dump({"library": "demo_ops/_C.so"}, f)
    os.makedirs(os.path.join(project, build, "demo_ops"))
    open(os.path.join(project, build, "demo_ops", "_C.so"), "wb").close()
    site_dir, cwd = tmp_path / "site", tmp_path / "cwd"
    site_dir.mkdir()
    cwd.mkdir()
    write = ("import json, os, sys; from autograd_scons.ship import wheel_files\n"
             "for name, data in wheel_files.editable_files(*json.loads(sys.argv[1])).items():\n"
             "    open(os.path.join(sys.argv[2], name), 'wb').write(data)\n")
    ship.run([sys.executable, "-c", write, json.dumps([project, "demo_ops", build, args]), site_dir], cwd,
             ship.environ(pythonpath))
    show = ("import json, site, sys; site.addsitedir(sys.argv[1]); from autograd_scons.ship.editable import EditableFinder\n"
            "print(json.dumps([[f.package, f.project, f.build, f.args] for f in sys.meta_path "
            "if isinstance(f, EditableFinder)]))")
    proc = ship.run([sys.executable, "-c", show, site_dir], cwd, ship.environ(pythonpath), check=False)
    planted = [p for p in _tree(tmp_path) if os.path.basename(p) == "PWNED"]
    assert planted == [], planted
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert json.loads(proc.stdout) == [["demo_ops", project, build, args]]
    for name in ("_demo_ops_editable.pth", "_demo_ops_editable.py"):  # no part of the path in source text
        with open(site_dir / name, "rb") as f:
            source = f.read()
        assert b"PWNED" not in source and b"astral" not in source, name


STD = [n for n in ("json", "os", "typing", "this") if n in sys.stdlib_module_names]


@pytest.mark.parametrize("name", ["torch", "aten", "c10", "std", "at", "caffe2", "autograd_scons", "codegen"] + STD)
def test_new_refuses_a_name_that_shadows_a_module_writing_nothing(tmp_path, pythonpath, name):
    proc = ship.new(tmp_path, name, pythonpath, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith("autograd_scons new: ") and repr(name) in line, line
    assert os.listdir(tmp_path) == []


def test_new_refuses_a_name_over_100_characters_and_takes_100(tmp_path, pythonpath):
    for name in ("a" * 101, "b" * 300):
        proc = ship.new(tmp_path, name, pythonpath, check=False)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
        line = proc.stderr.strip()
        assert "\n" not in line and line.startswith("autograd_scons new: ") and "100" in line, line
        assert os.listdir(tmp_path) == []
    ship.new(tmp_path, "c" * 100, pythonpath)
    assert os.listdir(tmp_path) == ["c" * 100]


def test_a_symlink_out_of_the_project_in_the_package_is_refused_for_the_wheel(tmp_path, pythonpath):
    # the wheel's Python files (package_files) are read the way the sdist's are
    project = _project(str(tmp_path))
    os.makedirs(os.path.join(project, "demo_ops"))
    with open(os.path.join(project, "demo_ops", "__init__.py"), "w") as f:
        f.write("# the package\n")
    (tmp_path / "secret.py").write_text("KEY = 1\n")
    os.symlink(os.path.join("..", "..", "secret.py"), os.path.join(project, "demo_ops", "leak.py"))
    os.symlink("__init__.py", os.path.join(project, "demo_ops", "alias.py"))
    code = ("import json; from autograd_scons import build_meta\n"
            "files = build_meta._main_hook(build_meta._package_files)('.', 'demo_ops')\n"
            "print(json.dumps({k: v.decode() for k, v in files.items()}))")
    proc = ship.run([sys.executable, "-c", code], project, ship.environ(pythonpath), check=False)
    line = _one_line_error(proc)
    assert "demo_ops/leak.py" in line and "outside the project" in line, line
    os.unlink(os.path.join(project, "demo_ops", "leak.py"))
    proc = ship.run([sys.executable, "-c", code], project, ship.environ(pythonpath))
    assert json.loads(proc.stdout) == {"demo_ops/__init__.py": "# the package\n",
                                       "demo_ops/alias.py": "# the package\n"}


def test_the_backend_builds_one_request_from_pips_settings():
    # `-C` settings become one ProjectBuild; an editable install records its
    # command line, and its rebuild on import builds the same request again.
    from autograd_scons.ship.project import ProjectBuild
    settings = {"PCH": "0", "-j": "4", "CXX": ["clang++", "g++"], "BUILD": "b/x", "--debug": "explain"}
    request = ProjectBuild.from_settings("/p", settings, "build/default")
    assert request == ProjectBuild("/p", "b/x", (("CXX", "g++"), ("PCH", "0")), 4, ("--debug=explain",))
    assert request.args == ["CXX=g++", "PCH=0", "-j4", "--debug=explain"]
    assert ProjectBuild.from_args("/p", "b/x", request.args) == request
    assert ProjectBuild.from_settings("/p", None, "build/default").folder == "/p/build/default"
