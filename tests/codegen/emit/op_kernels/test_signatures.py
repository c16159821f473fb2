"""`python -m autograd_scons signatures YAML` (codegen/emit/op_kernels/signatures.py)
and docs/yaml-reference.md's table of what a kernel receives for each
schema type: the command prints each `dispatch:` kernel's declaration as the
generated `ops/<ns>_<op>.h` has it, the table's C++ types are the
generator's, and (compile) a kernel written from the command's output
compiles against the generated headers, reading each argument with the
table's expressions."""

import os
import re
import subprocess
import sys

import pytest

from autograd_scons.codegen.emit.op_kernels.kernels import render_kernel
from autograd_scons.codegen.model.extension_op import dispatcher_signature
from autograd_scons.codegen.parse.extension_ops import kernel_units
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.engine.units import load_units
from autograd_scons.codegen.parse.native_functions import parse_native_functions
from support.spec_facts import REPO

EXAMPLE_NF = os.path.join(REPO, "specs", "native_functions.yaml")
CODE = re.compile(r"`([^`]+)`")


def signatures(path: str, check=True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograd_scons", "signatures", path], capture_output=True,
                          text=True, check=check, cwd=REPO)


def native_blocks(text: str) -> list[str]:
    return re.findall(r"^namespace \w+::native \{\n.*?^\}  // namespace \w+::native$", text, re.M | re.S)


def type_table() -> list[tuple[list[str], str, list[str]]]:
    """docs/yaml-reference.md's rows: (schema types, C++ type, expressions reading `x`)."""
    with open(os.path.join(REPO, "docs", "yaml-reference.md"), encoding="utf-8") as f:
        section = f.read().split("## Argument types in kernels", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            reads = [c for c in CODE.findall(cells[2]) if re.search(r"\bx\b", c)]
            rows.append((CODE.findall(cells[0]), CODE.findall(cells[1])[0], reads))
    return rows


def table_specs(tmp_path) -> tuple[str, list[tuple[str, str, list[str]]]]:
    """A native_functions.yaml with one op per row's schema type, each with
    a CPU kernel: the path, and (kernel, C++ type, expressions) per op."""
    lines, kernels = [], []
    for types, cpp, reads in type_table():
        for t in types:
            i = len(kernels)
            lines.append(f"- func: ty::t{i}(Tensor self, {t} x) -> Tensor\n  dispatch:\n    CPU: k{i}\n")
            kernels.append((f"k{i}", cpp, reads))
    nf = tmp_path / "native_functions.yaml"
    nf.write_text("".join(lines))
    return str(nf), kernels


def test_the_output_declares_each_kernel_as_the_generated_header_does(tmp_path):
    out = signatures(EXAMPLE_NF).stdout
    assert "at::Tensor block_sum_cpu(const at::Tensor & self, c10::SymInt block);" in out
    headers = {}
    for unit in load_units(EXAMPLE_NF, os.path.join(REPO, "specs", "derivatives.yaml")):
        headers.update({p: t for p, t in unit.render(EmitOptions()).items() if p.endswith(".h")})
    generated = [b for p, t in sorted(headers.items()) if p.startswith("ops/") for b in native_blocks(t)]
    printed = native_blocks(out)
    assert sorted(printed) == sorted(generated) and len(printed) > 10   # every op of the example with dispatch:


def test_a_bad_yaml_is_one_located_line(tmp_path):
    nf = tmp_path / "native_functions.yaml"
    nf.write_text("- func: ty::f(Tensor self) -> Tensor\n  dispatch:\n    Sparse: k\n")
    p = signatures(str(nf), check=False)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.startswith(f"error: {nf}:3: entry 'ty::f(Tensor self) -> Tensor': unknown dispatch key 'Sparse'")
    assert p.stderr.count("\n") == 1


def test_the_docs_table_gives_the_types_the_kernels_receive(tmp_path):
    rows = type_table()
    listed = {t for types, _, _ in rows for t in types}
    # the list, at least
    assert {"SymInt", "SymInt[]", "Scalar", "Tensor?", "Tensor[]", "ScalarType?"} <= listed
    assert all(reads for _, _, reads in rows), "every row says how to read its value"
    nf, kernels = table_specs(tmp_path)
    native = parse_native_functions(nf, open(nf).read(), None)
    got = [dispatcher_signature(f)[1][1] for f in native.functions if f.namespace == "ty"]
    assert got == [cpp for _, cpp, _ in kernels]


@pytest.mark.compile
def test_a_kernel_written_from_the_output_compiles_against_the_generated_headers(tmp_path):
    """Each printed declaration becomes a qualified definition (`at::Tensor
    ty::native::k0(...) { ... }`), which the compiler refuses unless the
    generated header declares exactly that function; its body reads `x` with
    the docs table's expressions.  The printed text also compiles alone."""
    from support import cxx
    if not cxx.have_compiler():
        pytest.skip("no C++ compiler")
    nf, kernels = table_specs(tmp_path)
    out = signatures(nf).stdout
    (tmp_path / "signatures.h").write_text(out)
    gen = tmp_path / "gen"
    native = parse_native_functions(nf, open(nf).read(), None)
    includes = []
    for unit in kernel_units(native, ()):
        for rel, text in render_kernel(unit, EmitOptions(namespace="ty::autograd")).items():
            if rel.endswith(".h"):
                (gen / rel).parent.mkdir(parents=True, exist_ok=True)
                (gen / rel).write_text(text)
                includes.append(f'#include "{rel}"')
    reads = {k: r for k, _, r in kernels}
    definitions = []
    for ns, body in re.findall(r"^namespace ([\w:]+) \{\n(.*?)^\}", out, re.M | re.S):
        for ret, name, params in re.findall(r"^(.+?) (\w+)\((.*)\);$", body, re.M):
            uses = "".join(f"  (void)({r});\n" for r in reads[name])
            definitions.append(f"{ret} {ns}::{name}({params}) {{\n{uses}  return self;\n}}\n")
    assert len(definitions) == len(kernels)
    (tmp_path / "kernels.cpp").write_text("#include <ATen/ATen.h>\n" + "\n".join(includes) + "\n\n"
                                          + "\n".join(definitions))
    (tmp_path / "alone.cpp").write_text('#include "signatures.h"\n')
    for tu in ("kernels.cpp", "alone.cpp"):
        proc = subprocess.run([cxx.CXX, *cxx.torch_flags(), f"-I{gen}", f"-I{tmp_path}", "-fsyntax-only",
                               str(tmp_path / tu)], capture_output=True, text=True)
        assert proc.returncode == 0, (tu, proc.stderr[-4000:])
