"""The README and docs/ stay true to the tree: every relative link resolves
(file and #anchor), every repository path they name exists, the README's
options table and `scons -h` list the same variables, the README's test
command is the one CI runs, and the README's quickstart extension generates
(and, marked `compile`, builds, loads and differentiates)."""

import glob
import os
import re
import subprocess
import sys

import pytest

from support.scons_helpers import clone, scons
from support.spec_facts import REPO

README = os.path.join(REPO, "README.md")
PAGES = [README] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
# A path into this repository written in backquotes or as a link text.
REPO_PATH = re.compile(r"(?<![\w./-])((?:codegen|site_scons|tests|benchmarks|specs|docs|\.ci)/[\w./<>-]*[\w>])")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def prose(text):
    """The text outside fenced code blocks (links in code are not links)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def uncommented(text):
    """The text outside HTML comments (notes to the editors, not to readers)."""
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def anchors(path):
    """GitHub's anchors of a markdown file's headings: lower case, spaces to
    '-', punctuation other than '-' and '_' dropped, repeats numbered."""
    seen, out = {}, set()
    for line in prose(read(path)).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m[1].strip().lower().replace("`", "")).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_the_docs_exist_and_the_readme_is_a_front_door():
    assert len(PAGES) > 5, PAGES
    assert len(read(README).splitlines()) <= 250


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, REPO))
def test_every_relative_link_resolves_inside_the_repo(page):
    bad = []
    for target in LINK.findall(uncommented(prose(read(page)))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
        if os.path.relpath(dest, REPO).startswith(".."):
            bad.append(f"{target}: outside the repository")
        elif not os.path.exists(dest):
            bad.append(f"{target}: no such file")
        elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
            bad.append(f"{target}: no heading #{anchor} in {os.path.relpath(dest, REPO)}")
    assert not bad, f"{os.path.relpath(page, REPO)}: " + "; ".join(bad)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, REPO))
def test_every_path_named_exists(page):
    text = uncommented(read(page))
    missing = sorted({p for p in REPO_PATH.findall(text)
                      if not glob.glob(os.path.join(REPO, p.rstrip(".")))
                      and not re.search(r"[<*]", p)})
    assert not missing, f"{os.path.relpath(page, REPO)} names paths that do not exist: {missing}"


# A Python file named bare (`runner.py`): one of this checkout's, or one of these.
PY_NAME = re.compile(r"(?<![\w./<>-])([\w-]+\.py)\b")
EXTERNAL_PY = {
    "gen_autograd_functions.py",   # torchgen's, the reference
    "gen_vmap_plumbing.py",        # torchgen's, the reference of the vmap plumbing (emit/op_kernels/vmap.py)
    "api.py",                      # enscons's, the backend compared with (docs/shipping.md)
    "_myops_editable.py",          # what the editable install writes into site-packages
    "train.py", "test_my_op.py",   # a user's programs, in examples of run-patched
    # what a stable-target build writes beside its library (docs/stable-abi.md)
    "_C_autograd.py", "stable_autograd_runtime.py", "stableops_ext_autograd.py",
}


def checkout_files():
    return subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout.split()


# A dotted name of the package (`autograd_scons.codegen.engine.incremental`,
# `autograd_scons.Error`), or of the generator by its folder's name
# (`codegen.engine.keys`), not a file's name (`x.json`).
DOTTED = re.compile(r"(?<![\w./-])((?:autograd_scons|codegen)(?:\.\w+)+)")
_FILE_SUFFIXES = {"py", "md", "cpp", "h", "json", "toml", "yaml", "so", "txt", "cfg"}
_DEFINES = r"^\s*(?:def|class)\s+{0}\b|^{0}\s*[:=]|^from \S+ import .*\b{0}\b|^import \S+ as {0}\b"


def _served(module_text, name):
    """Whether a package's module hands `name` out without defining it at
    the top: its `__all__` (served by `__getattr__`), or an old name of
    moved_names.py's MOVED."""
    listed = re.search(r"^__all__ = \[(.*?)\]", module_text, flags=re.M | re.S)
    moved = re.search(r"^MOVED = \{(.*?)^\}", module_text, flags=re.M | re.S)
    return any(m and re.search(rf'"{re.escape(name)}"', m.group(1)) for m in (listed, moved))


def stale_dotted(name):
    """Whether a dotted name resolves to none of the package's modules, or
    to a module that defines nothing under the name's next part."""
    parts = name.split(".")
    if parts[-1] in _FILE_SUFFIXES:   # a file's name (`_autograd_scons.json`)
        return False
    parts = ["autograd_scons"] + parts if parts[0] == "codegen" else parts
    site = os.path.join(REPO, "site_scons")
    for i in range(len(parts), 0, -1):
        folder = os.path.join(site, *parts[:i])
        module = os.path.join(folder, "__init__.py") if os.path.isdir(folder) else folder + ".py"
        if os.path.isfile(module):
            rest, text = parts[i:], read(module)
            if not rest or re.search(_DEFINES.format(re.escape(rest[0])), text, flags=re.M) or _served(text, rest[0]):
                return False
            moved = os.path.join(site, "autograd_scons", "moved_names.py")   # the package's old names
            return not (parts[:i] == ["autograd_scons"] and _served(read(moved), rest[0]))
    return True


def stale_names(text, basenames):
    """Repository paths that do not exist, bare Python file names that are
    none of the checkout's (nor EXTERNAL_PY), and dotted names of the
    package that name no module or definition, in `text`."""
    paths = {p for p in REPO_PATH.findall(text)
             if not glob.glob(os.path.join(REPO, p.rstrip("."))) and not re.search(r"[<*]", p)}
    names = {n for n in PY_NAME.findall(text) if n not in basenames and n not in EXTERNAL_PY}
    dotted = {n for n in DOTTED.findall(text) if stale_dotted(n)}
    return sorted(paths | names | dotted)


def comments_of(path):
    """(line, text) of a Python file's comments and docstrings."""
    import ast
    import io
    import tokenize
    text = read(path)
    found = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)
             if t.type == tokenize.COMMENT]
    # Statements only (a docstring's holder is one): the expressions are most
    # of a module's nodes, and ast.walk through them was most of this test.
    stack: list = [ast.parse(text, path)]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found.append((node.body[0].lineno, doc))
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(n for n in getattr(node, field, ()) if isinstance(n, (ast.stmt, ast.excepthandler,
                                                                               ast.match_case)))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, REPO))
def test_every_python_file_named_bare_exists(page):
    stale = stale_names(uncommented(read(page)), {os.path.basename(f) for f in checkout_files()})
    assert not stale, f"{os.path.relpath(page, REPO)} names files that do not exist: {stale}"


def _hash_comments(rel):
    """(line, text) of the `#` (and setup.cfg's `;`) comment lines of a shell
    script, a TOML or a cfg file."""
    return [(i, line) for i, line in enumerate(read(os.path.join(REPO, rel)).splitlines(), 1)
            if line.lstrip().startswith(("#", ";")) or " # " in line]


@pytest.mark.compile
def test_code_comments_and_setup_cfg_name_only_files_that_exist():
    """The comments and docstrings of the package, tests/ and benchmarks/,
    and the comments of the shell scripts, pyproject.toml and setup.cfg,
    name paths, Python files and dotted module names that exist: a module
    moved or renamed leaves no stale name behind."""
    files = checkout_files()
    basenames = {os.path.basename(f) for f in files}
    stale = []
    for rel in files:
        full = os.path.join(REPO, rel)
        if os.path.islink(full) or not os.path.isfile(full):
            continue
        if rel.endswith(".py") and rel.startswith(("site_scons/", "tests/", "benchmarks/")):
            stale += [f"{rel}:{line}: {n}" for line, text in comments_of(full) for n in stale_names(text, basenames)]
        elif rel.endswith(".sh") or rel in (".ci/run", "pyproject.toml", "setup.cfg"):
            stale += [f"{rel}:{line}: {n}" for line, text in _hash_comments(rel) for n in stale_names(text, basenames)]
    assert not stale, "stale names in comments: " + "; ".join(stale)


def test_a_stale_name_is_found():
    """The check can fail: the shapes the issue found (a moved module by path,
    a removed one by its bare name)."""
    basenames = {os.path.basename(f) for f in checkout_files()}
    assert stale_names("# (site_scons/jit_load.py defines it)", basenames) == ["site_scons/jit_load.py"]
    assert stale_names("# the SConstruct (load_sconstruct.py)", basenames) == ["load_sconstruct.py"]
    assert stale_names("# site_scons/autograd_scons/buildenv/cuda_flags.py, runner.py, gen_autograd_functions.py",
                       basenames) == []
    # dotted names: a module's old name, a definition gone, and good ones
    assert stale_names("# codegen.incremental's update; autograd_scons.codegen.engine.writer.gone",
                       basenames) == ["autograd_scons.codegen.engine.writer.gone", "codegen.incremental"]
    assert stale_names("# autograd_scons.codegen.engine.incremental.update, autograd_scons.Error, "
                       "codegen.engine.keys, autograd_scons.tool", basenames) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, REPO))
def test_the_docs_say_behaviour_not_test_function_names(page):
    named = re.findall(r"::test_\w+|\btest_\w+\*", read(page))
    assert not named, f"{os.path.relpath(page, REPO)} cites test functions (say what they check): {named}"


def options_table():
    """The variables (`NAME=`) in the first column of the README's options table."""
    section = read(README).split("\n## Options\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows, "no options table under '## Options' in README.md"
    return {name for row in rows for name in re.findall(r"\b([A-Z][A-Z0-9_]+)=", row.split(" | ")[0])}


@pytest.fixture(scope="module")
def scons_help(tmp_path_factory):
    """`scons -h` of this checkout (its build folder in a temporary one)."""
    return scons(REPO, "-h", "-Q", f"BUILD={tmp_path_factory.mktemp('help')}").stdout


def test_the_options_table_and_scons_help_list_the_same_variables(scons_help):
    helped = set(re.findall(r"^([A-Z][A-Z0-9_]+): ", scons_help, flags=re.M))
    assert "UNITY" in helped, scons_help[-2000:]
    table = options_table()
    assert table - helped == set(), "in the README's options table, not in `scons -h`"
    assert helped - table == set(), "in `scons -h`, not in the README's options table"


def test_the_readme_test_command_is_what_ci_runs():
    ci = re.findall(r"^(python -m pytest.*?)(?: \|\|.*)?$", read(os.path.join(REPO, ".ci", "run")), flags=re.M)
    assert ci == ["python -m pytest -q"], ci
    section = read(README).split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    commands = [line.split("#")[0].strip() for line in section.splitlines() if line.startswith("    python -m pytest")]
    assert commands and commands[0] == ci[0], commands


def quickstart_files():
    """relpath -> text of the README's fenced blocks whose first line names a
    file under myext/ (`# myext/...` or `// myext/...`)."""
    files = {}
    for block in re.findall(r"^```\w*\n(.*?)^```", read(README), flags=re.M | re.S):
        m = re.match(r"(?:#|//) (myext/\S+)\n", block)
        if m:
            files[m[1]] = block
    return files


def write_quickstart(root):
    files = quickstart_files()
    assert sorted(files) == ["myext/SConscript", "myext/csrc/cube.cpp", "myext/derivatives.yaml",
                             "myext/native_functions.yaml"], sorted(files)
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    return os.path.join(root, "myext")


def test_the_quickstart_extension_generates_its_function_and_kernel(tmp_path):
    ext = write_quickstart(tmp_path)
    out = tmp_path / "gen"
    subprocess.run([sys.executable, "-m", "autograd_scons", "generate", "--native-functions",
                    os.path.join(ext, "native_functions.yaml"), "--derivatives",
                    os.path.join(ext, "derivatives.yaml"), "--out", str(out)],
                   cwd=REPO, check=True, capture_output=True, text=True)
    assert (out / "functions" / "CubeBackward0.cpp").exists()
    header = (out / "ops" / "myext_cube.h").read_text()
    assert re.search(r"namespace myext::native \{.*at::Tensor cube\(const at::Tensor & self\)", header, re.S), header


@pytest.mark.compile
def test_the_quickstart_builds_loads_and_differentiates(tmp_path):
    root = clone(tmp_path / "repo")
    write_quickstart(root)
    scons(root, "-j2", "EXAMPLE=myext", "OPT=-O0")
    blocks = re.findall(r"^```python\n(.*?)^```", read(README), flags=re.M | re.S)
    use = next(b for b in blocks if "myext.so" in b)
    code = "".join(f"print(repr({line.split('#')[0].strip()}))\n" if line.startswith(("y.grad_fn", "torch.autograd.gradcheck"))
                   else line + "\n" for line in use.splitlines())
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["'CubeBackward0'", "True"], proc.stdout
