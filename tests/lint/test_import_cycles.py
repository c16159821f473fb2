"""No import cycle among the modules of the package `autograd_scons`
(site_scons/autograd_scons/): the SCons side (its sub-packages and
site_tools/) and the generator (its codegen/).

Read statically, from each module's syntax tree, so nothing is imported.
Every `import` and `from ... import` counts wherever it stands: at the top,
inside a function, or under `try`, because a lazy import only hides a
circle (the first call closes it); only imports under `if TYPE_CHECKING:`
are left out, as they never run.  `from pkg import name` counts as an
import of `pkg.name` when that is a module, else of `pkg`.  Relative imports
are resolved against the module's package, as Python resolves them.  Each
module is named as it is installed (`autograd_scons.ship.editable`,
`autograd_scons.codegen.engine.incremental`): every import in the project uses
those names.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import os
import sys

from support.spec_facts import REPO


def _modules() -> dict[str, str]:
    """{module name: path} for the package, site_scons/autograd_scons/: each
    name is its path below site_scons/."""
    found = {}
    site = os.path.join(REPO, "site_scons")
    for folder, subdirs, names in os.walk(os.path.join(site, "autograd_scons")):
        rel_folder = os.path.relpath(folder, site)
        # ship/templates/ holds a new project's files, not modules of the package
        subdirs[:] = [d for d in subdirs if d != "__pycache__"
                      and os.path.join(rel_folder, d) != os.path.join("autograd_scons", "ship", "templates")]
        for n in names:
            if n.endswith(".py"):
                name = os.path.relpath(os.path.join(folder, n), site)[:-3].replace(os.sep, ".")
                found[name.removesuffix(".__init__")] = os.path.join(folder, n)
    return found


@functools.lru_cache(maxsize=None)   # (the cycle and layer checks read each module once)
def _imported_names(name: str, path: str) -> tuple[str, ...]:
    """Every module name `name` (at `path`) imports, absolute, as written
    (relative imports resolved; `from a import b` as `a.b`)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    skip = _type_checking_only(tree)
    wanted: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            wanted += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            wanted += [f"{base}.{a.name}" for a in node.names]
    return tuple(wanted)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:`."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def imports_of(name: str, path: str, modules: dict[str, str]) -> set[str]:
    """The modules of `modules` that module `name` (at `path`) imports."""
    wanted = [w if w in modules else w.rpartition(".")[0] if "." in w and w.rpartition(".")[0] else w
              for w in _imported_names(name, path)]
    found = set()
    for w in wanted:
        while w and w not in modules:   # `import a.b.c` imports a.b.c, or the nearest module of ours above
            w = w.rpartition(".")[0]
        if w and w != name:
            found.add(w)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    modules = _modules()
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    # The graph is the real one: the tool imports the generator and its own
    # modules, relative imports inside the generator are seen.
    assert {"autograd_scons.codegen.engine.incremental", "autograd_scons.tool.closing_lines"} <= \
        graph["autograd_scons.tool.builders"]
    assert "autograd_scons.codegen.tree" in graph["autograd_scons.codegen.engine.writer"]   # `from .tree import`
    assert cycles(graph) == []


def test_a_cycle_is_found(tmp_path):
    """The check can fail: a lazy import closing a circle is one."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import b\n")
    b.write_text("def f():\n    import a\n")
    c = tmp_path / "c.py"
    c.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n")
    modules = {"a": str(a), "b": str(b), "c": str(c)}
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    assert graph["c"] == set()
    assert cycles(graph) == [["a", "b"]]


def test_a_cycle_through_relative_imports_is_found(tmp_path, monkeypatch):
    """The shape of the cycle the test once missed (build_meta <-> editable):
    `from .editable import X` at the top of one module of the package, and
    `from .build_meta import run` inside a function of the other."""
    pkg = tmp_path / "site_scons" / "autograd_scons"
    (pkg / "ship").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "build_meta.py").write_text("from .ship.editable import BUILDING\n")
    (pkg / "ship" / "editable.py").write_text(
        "BUILDING = 1\ndef rebuild():\n    from ..build_meta import run\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", str(tmp_path))
    modules = _modules()
    assert set(modules) == {"autograd_scons", "autograd_scons.build_meta", "autograd_scons.ship.editable"}
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    assert cycles(graph) == [["autograd_scons.build_meta", "autograd_scons.ship.editable"]]


# ------------------------------------------------------------------ layers

# Who may import whom: each row is what a package's docstring says it may
# import (codegen/__init__.py, site_scons/autograd_scons/*/__init__.py, the top modules'
# own docstrings).  A module takes the first row whose pattern (fnmatch, over
# installed names) matches it; it may import the modules its row's
# `may_import` patterns match, and none of the `not_external` top-level
# packages.  Moving a module is a change of the patterns here, nothing else.
# What every layer may import: the base package (base/__init__.py), at the bottom.
_BASE = "autograd_scons.base*"
# What every stage of the generator may import besides the stages before it.
_GENERATOR_BASE = ["autograd_scons.codegen", "autograd_scons.codegen.tree", _BASE]
LAYERS = [
    # (modules, may import, not external)
    ("autograd_scons.base*", [_BASE], ("SCons", "torch")),
    # the generator's stages, each on those before it (codegen/__init__.py)
    ("autograd_scons.codegen.model*", ["autograd_scons.codegen.model*", *_GENERATOR_BASE], ("SCons", "torch")),
    ("autograd_scons.codegen.parse*", ["autograd_scons.codegen.parse*", "autograd_scons.codegen.model*",
                                      *_GENERATOR_BASE], ("SCons", "torch")),
    # emission reads no yaml: the model is complete before it (parse/extension_ops.py);
    # the stable target's Python emitter also translates the formulas
    ("autograd_scons.codegen.emit.stable_python*", ["autograd_scons.codegen.emit*", "autograd_scons.codegen.model*",
                                                    "autograd_scons.codegen.formula*", "autograd_scons.codegen.templates",
                                                    *_GENERATOR_BASE], ("SCons", "torch")),
    ("autograd_scons.codegen.emit*", ["autograd_scons.codegen.emit*", "autograd_scons.codegen.model*",
                                      "autograd_scons.codegen.templates", *_GENERATOR_BASE], ("SCons", "torch")),
    # the formula translator, on the model; its helpers package is runtime code for the
    # generated Python (torch only), never imported by the generator itself
    ("autograd_scons.codegen.formula.torch_helpers*", ["autograd_scons.codegen.formula.torch_helpers*"], ("SCons",)),
    ("autograd_scons.codegen.formula*", ["autograd_scons.codegen.formula*", "autograd_scons.codegen.model*",
                                         *_GENERATOR_BASE], ("SCons", "torch")),
    ("autograd_scons.codegen.templates", [], ("SCons", "torch")),
    ("autograd_scons.codegen.tree", [_BASE], ("SCons", "torch")),
    ("autograd_scons.codegen*", ["autograd_scons.codegen*", _BASE], ("SCons", "torch")),
    # the build report as data and its gate (build_report/__init__.py)
    ("autograd_scons.build_report*", ["autograd_scons.build_report*", "autograd_scons.codegen*", _BASE],
     ("SCons", "torch")),
    # the benchmark of a project's builds (bench/__init__.py)
    ("autograd_scons.bench*", ["autograd_scons.bench*", "autograd_scons.build_report*", "autograd_scons.codegen*", _BASE], ("SCons", "torch")),
    ("autograd_scons.tool.toolpath", [], ("SCons", "torch")),
    ("autograd_scons.tool*", ["autograd_scons.tool*", "autograd_scons.codegen*", "autograd_scons.build_report*",
                              _BASE], ("torch",)),
    ("autograd_scons.buildenv*", ["autograd_scons.buildenv*", "autograd_scons.tool*", "autograd_scons.codegen*",
                                  "autograd_scons.build_report.document", _BASE], ("torch",)),
    ("autograd_scons.jit.sconstruct", ["autograd_scons.jit*", "autograd_scons.buildenv*", "autograd_scons.codegen*",
                                       "autograd_scons.tool.closing_lines", _BASE], ()),
    ("autograd_scons.jit*", ["autograd_scons.jit*", "autograd_scons.buildenv*", "autograd_scons.codegen*",
                             "autograd_scons.build_report.document", _BASE], ("SCons",)),
    # (shipping reads a project's stable target as the generator does: model/stable_target.py)
    ("autograd_scons.ship*", ["autograd_scons.ship*", "autograd_scons.buildenv*", "autograd_scons.codegen.model.stable_target",
                              _BASE], ("SCons",)),
    ("autograd_scons.torch_patch.patch_sconstruct", ["autograd_scons.torch_patch*", "autograd_scons.buildenv*",
                                                     "autograd_scons.codegen*", "autograd_scons.tool.closing_lines",
                                                     _BASE], ()),
    ("autograd_scons.torch_patch*", ["autograd_scons.torch_patch*", "autograd_scons.buildenv*", "autograd_scons.codegen*",
                                     "autograd_scons.build_report.document", _BASE], ("SCons",)),
    # the PEP 517 backend, on shipping; a project's SConstruct API, on the build environment
    ("autograd_scons.build_meta", ["autograd_scons.ship*", "autograd_scons.buildenv*", "autograd_scons.extension",
                                   _BASE], ("SCons",)),
    ("autograd_scons.extension", ["autograd_scons.buildenv*", "autograd_scons.tool.toolpath", "autograd_scons.codegen*",
                                  "autograd_scons.ship.stable_project", _BASE], ()),   # (the project's one switch)
    ("autograd_scons.__main__", ["autograd_scons.codegen*", "autograd_scons.ship*", "autograd_scons.torch_patch*",
                                 "autograd_scons.build_report*", "autograd_scons.bench*", "autograd_scons.tool.weaken",
                                 _BASE], ()),
    ("autograd_scons.site_tools.*", ["autograd_scons.tool*"], ()),
    # the old top-level names (moved_names.py): it imports their new places by name, on first use
    ("autograd_scons.moved_names", [], ("SCons", "torch")),
    # the root re-exports: the error base, TOOLPATH, load(), the patch's query
    ("autograd_scons", ["autograd_scons.base.errors", "autograd_scons.tool.toolpath", "autograd_scons.jit*",
                        "autograd_scons.torch_patch.preload", "autograd_scons.moved_names"], ()),
]


def _row(module: str):
    return next((row for row in LAYERS if fnmatch.fnmatchcase(module, row[0])), None)


def layer_violations(modules: dict[str, str]) -> list[str]:
    """Every import outside the matrix, as `module -> imported`; a module no
    row covers is one too."""
    bad = []
    for m, path in sorted(modules.items()):
        row = _row(m)
        if row is None:
            bad.append(f"{m}: no row in LAYERS")
            continue
        for w in sorted(imports_of(m, path, modules)):
            if not any(fnmatch.fnmatchcase(w, p) for p in row[1]):
                bad.append(f"{m} -> {w}")
        for w in sorted({n.split(".")[0] for n in _imported_names(m, path)} & set(row[2])):
            bad.append(f"{m} -> {w}")
    return bad


def test_every_import_is_one_the_layers_allow():
    assert layer_violations(_modules()) == []


def test_an_upward_import_is_found(tmp_path, monkeypatch):
    """The check can fail: the tool importing the build environment (as
    tool/pch.py once did), the generator importing SCons or the tool, and a
    stage of the generator importing a later one (parsing the engine)."""
    pkg = tmp_path / "site_scons" / "autograd_scons"
    for folder in ("tool", "buildenv", "base", "codegen/parse", "codegen/engine"):
        (pkg / folder).mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "buildenv" / "prelude_folders.py").write_text("")
    (pkg / "base" / "private_folder.py").write_text("")
    (pkg / "tool" / "pch.py").write_text(
        "from autograd_scons.buildenv import prelude_folders\n"
        "from autograd_scons.base.private_folder import ensure\n")
    (pkg / "codegen" / "cli.py").write_text("import SCons.Script\ndef f():\n    from autograd_scons.tool import pch\n")
    for stage in ("parse", "engine"):
        (pkg / "codegen" / stage / "__init__.py").write_text("")
    (pkg / "codegen" / "engine" / "writer.py").write_text("")
    (pkg / "codegen" / "parse" / "native_cache.py").write_text("from ..engine.writer import write_atomic\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", str(tmp_path))
    assert layer_violations(_modules()) == ["autograd_scons.codegen.cli -> autograd_scons.tool.pch",
                                            "autograd_scons.codegen.cli -> SCons",
                                            "autograd_scons.codegen.parse.native_cache -> "
                                            "autograd_scons.codegen.engine.writer",
                                            "autograd_scons.tool.pch -> autograd_scons.buildenv.prelude_folders"]
