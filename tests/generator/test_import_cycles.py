"""No import cycle among the generator's modules (codegen/) and the SCons
side's (site_scons/, site_scons/site_tools/).

Read statically, from each module's syntax tree, so nothing is imported.
Every `import` and `from ... import` counts wherever it stands: at the top,
inside a function, or under `try`, because a lazy import only hides a
circle (the first call closes it); only imports under `if TYPE_CHECKING:`
are left out, as they never run.  `from pkg import name` counts as an
import of `pkg.name` when that is a module, else of `pkg`.  site_scons/
modules are named as they import each other there (`autograd_override`,
not `site_scons.autograd_override`), since SCons puts site_scons/ on the
path; its site_tools/ are tools, named `site_tools.<tool>`.
"""

from __future__ import annotations

import ast
import os

from support.spec_facts import REPO


def _modules() -> dict[str, str]:
    """{module name: path} for codegen/ and site_scons/."""
    found = {}
    for top, base in (("codegen", REPO), ("site_scons", os.path.join(REPO, "site_scons"))):
        for folder, _, names in os.walk(os.path.join(REPO, top)):
            for n in names:
                if not n.endswith(".py"):
                    continue
                path = os.path.join(folder, n)
                name = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
                if name == "__init__":
                    name = "autograd_scons"   # site_scons/__init__.py: the installed package
                elif name.endswith(".__init__"):
                    name = name[:-len(".__init__")]
                found[name] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:`."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def imports_of(name: str, path: str, modules: dict[str, str]) -> set[str]:
    """The modules of `modules` that module `name` (at `path`) imports."""
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
            wanted += [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
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
    # The graph is the real one: the tool imports the generator and its helpers.
    assert {"codegen.incremental", "autograd_report"} <= graph["site_tools.autograd_functions"]
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
