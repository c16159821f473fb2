"""Hostile and unlucky inputs: each gets one located line and a non-zero exit,
or (for build facts) a different signature; never a traceback, a hang or
half-written output."""

import json
import os
import subprocess
import sys

import pytest
import SCons.Environment
import SCons.Subst
from support.scons_helpers import FAKE_CXX, REPO, clone, compiled, scons, tree

from autograd_scons.__main__ import main

from autograd_scons.buildenv import cuda_flags
from autograd_scons.buildenv import torch_flags

# ------------------------------------------------ compile signature facts

PY311 = {"SOABI": "cpython-311-x86_64-linux-gnu", "py_version_nodot": "311", "ABIFLAGS": ""}
PY312 = {"SOABI": "cpython-312-x86_64-linux-gnu", "py_version_nodot": "312", "ABIFLAGS": ""}
PY313T = {"SOABI": "cpython-313t-x86_64-linux-gnu", "py_version_nodot": "313", "ABIFLAGS": "t"}
TORCH = {"root": "/opt/a/site-packages/torch", "abi": 1, "version": "2.13.0+cpu"}


def _pch_command():
    """The autograd_functions tool's command for its precompiled header
    (pch=True): a string the tool keeps to itself, read off its PCH module
    (autograd_scons.tool.pch) once the tool is loaded."""
    env = SCons.Environment.Environment(tools=[], ENV={}, toolpath=[os.path.join(REPO, "site_scons", "autograd_scons", "site_tools")])
    env.Tool("autograd_functions")
    from autograd_scons.tool.pch import PCHCOM
    return PCHCOM


# Every command whose output depends on torch's and Python's headers: C++
# and C compiles, and the precompiled header's.
COMMANDS = {"C++": "$SHCXXCOM", "C": "$SHCCCOM", "PCH": _pch_command()}
command = pytest.mark.parametrize("command", sorted(COMMANDS))


def compile_signature(monkeypatch, python=PY311, torch=TORCH, include="/opt/a/include/python3.11", command="C++"):
    """The signed compile command line (`command` of COMMANDS) of an env
    configured by torch_flags, with the Python and torch facts faked."""
    real_var, real_paths = torch_flags.sysconfig.get_config_var, torch_flags.sysconfig.get_paths
    monkeypatch.setattr(torch_flags.sysconfig, "get_config_var",
                        lambda name: python[name] if name in python else real_var(name))
    monkeypatch.setattr(torch_flags.sysconfig, "get_paths", lambda *a, **k: dict(real_paths(), include=include))
    monkeypatch.setattr(torch_flags, "torch_facts", lambda cache_path: dict(torch))
    env = SCons.Environment.Environment(tools=["gcc", "g++"], ENV={})
    torch_flags.configure(env, "unused.json")
    monkeypatch.undo()
    return env.subst(COMMANDS[command], SCons.Subst.SUBST_SIG)


@command
def test_python_version_is_in_the_compile_signature(monkeypatch, command):
    base = compile_signature(monkeypatch, command=command)
    assert compile_signature(monkeypatch, python=PY312, command=command) != base
    # Without SOABI (e.g. Windows), the same facts are spelled from the version and ABI flags.
    no_soabi = {"SOABI": None, "py_version_nodot": "311", "ABIFLAGS": ""}
    assert compile_signature(monkeypatch, python=no_soabi, command=command) != \
        compile_signature(monkeypatch, python=dict(no_soabi, py_version_nodot="312"), command=command)


@command
def test_python_abi_flags_are_in_the_compile_signature(monkeypatch, command):
    py313 = dict(PY313T, SOABI="cpython-313-x86_64-linux-gnu", ABIFLAGS="")
    assert compile_signature(monkeypatch, python=PY313T, command=command) != \
        compile_signature(monkeypatch, python=py313, command=command)


@command
@pytest.mark.parametrize("change", [{"abi": 0}, {"version": "2.14.0+cpu"}])
def test_torch_facts_are_in_the_compile_signature(monkeypatch, change, command):
    assert compile_signature(monkeypatch, torch=dict(TORCH, **change), command=command) != \
        compile_signature(monkeypatch, command=command)


@command
def test_install_folders_are_not_in_the_compile_signature(monkeypatch, command):
    # A CacheDir shared by checkouts (and installs) in other folders keeps hitting.
    base = compile_signature(monkeypatch, command=command)
    elsewhere = compile_signature(monkeypatch, torch=dict(TORCH, root="/home/b/venv/torch"),
                                  include="/home/b/include/python3.11", command=command)
    assert elsewhere == base
    assert "/opt/a" not in base and "-o " in base   # the command itself, not an empty one


CUDA_TORCH = dict(TORCH, version="2.14.1+cu130", cuda="13.0", cuda_arches=["sm_80", "sm_90"], gpus=[])
NVCC_ID = {"release": "13.0", "id": "V13.0.88_cuda_13.0.r13.0_compiler.36424714_0", "top": "/opt/cuda"}


def nvcc_signature(monkeypatch, archs="8.0;9.0", nvcc=NVCC_ID, torch=CUDA_TORCH, home="/opt/cuda"):
    """(signed .cu compile line, signed C++ compile line) of an env set up
    by torch_flags and cuda_flags, with torch, nvcc and the toolkit faked."""
    import SCons.Tool
    monkeypatch.setattr(torch_flags, "torch_facts", lambda cache_path: dict(torch))
    monkeypatch.setattr(cuda_flags, "nvcc_identity", lambda path: dict(nvcc))
    monkeypatch.setattr(cuda_flags, "find_nvcc", lambda environ: f"{home}/bin/nvcc")
    env = SCons.Environment.Environment(tools=["g++"], ENV={})
    SCons.Tool.Tool("nvcc", toolpath=[os.path.join(REPO, "site_scons", "autograd_scons", "site_tools")])(env)
    cuda_flags.configure(env, torch_flags.configure(env, "unused.json"), "auto", archs, environ={})
    monkeypatch.undo()
    return env.subst("$SHNVCCCOM", SCons.Subst.SUBST_SIG), env.subst("$SHCXXCOM", SCons.Subst.SUBST_SIG)


def test_arches_nvcc_and_torch_are_in_the_nvcc_compile_signature(monkeypatch):
    base, cxx = nvcc_signature(monkeypatch)
    arch, arch_cxx = nvcc_signature(monkeypatch, archs="9.0")
    assert arch != base and arch_cxx == cxx  # an arch change recompiles the .cu objects only
    assert nvcc_signature(monkeypatch, nvcc=dict(NVCC_ID, id="V13.1.0_other"))[0] != base
    assert nvcc_signature(monkeypatch, torch=dict(CUDA_TORCH, version="2.14.2+cu130"))[0] != base
    # Every flag is signed; the install folders are not (a shared CacheDir keeps hitting).
    for flag in ("-gencode=arch=compute_80,code=sm_80", "--expt-relaxed-constexpr", "-Xcompiler -fPIC",
                 "-std=c++20", "-ccbin g++", "-D_GLIBCXX_USE_CXX11_ABI=1"):
        assert flag in base
    elsewhere = nvcc_signature(monkeypatch, torch=dict(CUDA_TORCH, root="/home/b/venv/torch"), home="/usr/cuda2")
    assert elsewhere[0] == base and "/opt/" not in base


# ---------------------------------------------------------- YAML aliases

NATIVE = """\
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method

- func: sin(Tensor self) -> Tensor
"""

DERIVATIVES = """\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self

- name: sin(Tensor self) -> Tensor
  self: grad * self.cos().conj()
"""


def alias_bomb():
    """Nine levels of nine aliases each: ~400 bytes that expand to 9**9 nodes."""
    lines = ["- name: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, cur in zip("abcdefgh", "bcdefghi"):
        lines.append(f"  {cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


# Run in a child with a memory cap: the bomb used to take minutes and GBs.
LIMITED = """\
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from autograd_scons.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def run_cli_limited(tmp_path, native, derivatives):
    (tmp_path / "nf.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(derivatives)
    cmd = [sys.executable, "-c", LIMITED, "infos", "--native-functions", str(tmp_path / "nf.yaml"),
           "--derivatives", str(tmp_path / "d.yaml")]
    try:
        # Generous: the check itself takes milliseconds; this only bounds a loaded machine.
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10, cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail("still expanding the aliases after 10 s")


def run_cli(tmp_path, capsys, native, derivatives):
    """`python -m autograd_scons infos`, in this process (for inputs that cannot hang it)."""
    (tmp_path / "nf.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(derivatives)
    rc = main(["infos", "--native-functions", str(tmp_path / "nf.yaml"),
               "--derivatives", str(tmp_path / "d.yaml")])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess([], rc, out, err)


def one_error_line(proc):
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize("where", ["derivatives", "native_functions"])
def test_alias_bomb_fails_fast_with_a_located_line(tmp_path, where):
    native, derivatives = (NATIVE, alias_bomb()) if where == "derivatives" else (alias_bomb(), DERIVATIVES)
    line = one_error_line(run_cli_limited(tmp_path, native, derivatives))
    name = "d.yaml" if where == "derivatives" else "nf.yaml"
    assert f"{tmp_path / name}:1: " in line
    assert "anchors and aliases are not allowed in spec files" in line


@pytest.mark.parametrize("text, line_no", [
    (NATIVE + "\n- func: &f cos(Tensor self) -> Tensor\n", 6),        # an unused anchor
    (NATIVE.replace("  variants: function, method", "  variants: &v function, method")
     + "\n- func: cos(Tensor self) -> Tensor\n  variants: *v\n", 2),  # a scalar alias
], ids=["unused anchor", "scalar alias"])
def test_any_anchor_is_refused_at_its_line(tmp_path, capsys, text, line_no):
    line = one_error_line(run_cli(tmp_path, capsys, text, DERIVATIVES))
    assert f"{tmp_path / 'nf.yaml'}:{line_no}: " in line
    assert "anchors and aliases are not allowed in spec files" in line


def test_ampersands_in_formulas_and_comments_are_fine(tmp_path, capsys):
    # `&&` and `& ` cannot start an anchor; `&other` could, and is looked at
    # more closely (it is inside a plain scalar: no anchor).
    derivatives = ("# Tensor & Tensor::foo(Tensor const & rhs) &x\n"
                   + DERIVATIVES.replace("grad * other", "grad * other * (self.is_contiguous() && !other.defined())")
                   .replace("grad * self\n", "grad * (self.is_contiguous() &other.defined()) * self\n"))
    proc = run_cli(tmp_path, capsys, NATIVE, derivatives)
    assert proc.returncode == 0, proc.stderr
    # Each formula is read whole, ampersands included (not cut at an anchor).
    (mul,) = [i for i in json.loads(proc.stdout)["infos"] if i["name"] == "mul"]
    formulas = {tuple(d["var_names"]): d["formula"] for d in mul["derivatives"]}
    assert formulas == {("self",): "grad * other * (self.is_contiguous() && !other.defined())",
                        ("other",): "grad * (self.is_contiguous() &other.defined()) * self"}


# ------------------------------------------------- empty derivatives.yaml

@pytest.mark.parametrize("text", ["", "# every entry was deleted\n\n# by mistake\n", "[]\n"],
                         ids=["empty", "comments only", "empty list"])
def test_empty_derivatives_is_refused(tmp_path, capsys, text):
    line = one_error_line(run_cli(tmp_path, capsys, NATIVE, text))
    assert line.startswith(f"error: {tmp_path / 'd.yaml'}:1: no derivatives entries"), line


def test_empty_derivatives_through_scons_fails_and_keeps_every_generated_file(tmp_path):
    root = clone(tmp_path / "repo")
    tiny_args = ("-j2", f"CXX={FAKE_CXX}", "EXAMPLE=tests/fixtures/tiny_ext")
    scons(root, *tiny_args)
    gen = os.path.join(root, "build", "example", "gen")
    before = tree(gen, skip=(".autograd_lock",))
    assert any(p.endswith("ScaleBackward0.cpp") for p in before)
    with open(os.path.join(root, "tests", "fixtures", "tiny_ext", "derivatives.yaml"), "w") as f:
        f.write("# nothing left\n")
    proc = scons(root, *tiny_args, check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert len(errors) == 1 and "derivatives.yaml:1: no derivatives entries" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert compiled(proc.stdout) == []
    assert tree(gen, skip=(".autograd_lock",)) == before


# ------------------------------------------------------------ bad names

# (func: line, what the one error line says); torch refuses each of these too.
BAD_NAMES = {
    "argument not an identifier": ("foo(Tensor se*/lf) -> Tensor", "argument name 'se*/lf'"),
    "argument not ASCII": ("foo(Tensor s\u00e9lf) -> Tensor", "argument name 's\u00e9lf'"),
    "argument starts with a digit": ("foo(Tensor 1self) -> Tensor", "argument name '1self'"),
    "argument a schema keyword": ("foo(Tensor self, int if) -> Tensor", "argument name 'if'"),
    "operator not ASCII": ("f\u00f6o(Tensor self) -> Tensor", "operator name 'f\u00f6o'"),
    "operator starts with a digit": ("1foo(Tensor self) -> Tensor", "operator name '1foo'"),
    "operator a schema keyword": ("ns::def(Tensor self) -> Tensor", "operator name 'def'"),
    "overload not ASCII": ("foo.ov\u00e9(Tensor self) -> Tensor", "overload name 'ov\u00e9'"),
    "overload 'default'": ("foo.default(Tensor self) -> Tensor", "overload name 'default'"),
    "overload with two underscores": ("foo.__x(Tensor self) -> Tensor", "overload name '__x'"),
    "namespace not ASCII": ("n\u015b::foo(Tensor self) -> Tensor", "namespace 'n\u015b'"),
    "namespace a schema keyword": ("None::foo(Tensor self) -> Tensor", "namespace 'None'"),
    "return not an identifier": ("foo(Tensor self) -> Tensor o$ut", "return name 'o$ut'"),
}
# Torch takes these, but they are C++ keywords: the generated code would not compile.
CXX_KEYWORDS = {
    "argument a C++ keyword": ("foo(Tensor self, int int) -> Tensor", "argument name 'int'"),
    "return a C++ keyword": ("foo(Tensor self) -> (Tensor new, Tensor delete)", "return name 'new'"),
    "namespace a C++ keyword": ("struct::foo(Tensor self) -> Tensor", "namespace 'struct'"),
}


@pytest.mark.parametrize("case", sorted(BAD_NAMES) + sorted(CXX_KEYWORDS))
def test_bad_names_are_refused_at_their_line(tmp_path, capsys, case):
    func, what = {**BAD_NAMES, **CXX_KEYWORDS}[case]
    native = NATIVE + f"\n- func: {func}\n  variants: function\n"
    line = one_error_line(run_cli(tmp_path, capsys, native, DERIVATIVES))
    assert f"{tmp_path / 'nf.yaml'}:6: entry '{func}': bad schema: {what}" in line, line


def test_torch_refuses_the_same_names():
    torch = pytest.importorskip("torch")
    for case, (func, _) in BAD_NAMES.items():
        with pytest.raises(Exception):  # noqa: B017 - torch raises RuntimeError or UnicodeDecodeError
            torch._C.parse_schema(func)
            pytest.fail(f"torch accepts {case}: {func}")
    for func, _ in CXX_KEYWORDS.values():
        torch._C.parse_schema(func)


@pytest.mark.compile
def test_a_cpu_torch_is_described_from_its_files_as_its_import_describes_it(tmp_path):
    """torch_flags.read_facts (no `import torch`) against the query it stands
    in for, on the installed CPU torch; and on files that cannot tell, None."""
    root = torch_flags._torch_dir()
    asked = subprocess.run([sys.executable, "-c", torch_flags._QUERY], check=True, capture_output=True, text=True)
    assert torch_flags.read_facts(root) == dict(json.loads(asked.stdout.splitlines()[-1]), root=root)
    fake = tmp_path / "torch"
    (fake / "lib").mkdir(parents=True)
    (fake / "lib" / "libc10.so").write_bytes(b"\x7fELF _ZN3c103strB5cxx11Ev")
    (fake / "version.py").write_text("__version__ = '9.0.0+cu999'\ncuda: Optional[str] = '99.9'\nhip = None\n")
    assert torch_flags.read_facts(str(fake)) is None            # a CUDA build: its arches need the import
    (fake / "version.py").write_text("__version__ = '9.0.0+cpu'\ncuda = None\nhip = None\n")
    assert torch_flags.read_facts(str(fake))["abi"] == 1
    (fake / "lib" / "libc10.so").write_bytes(b"\x7fELF _ZN3c103strEv")
    assert torch_flags.read_facts(str(fake)) == {"abi": 0, "version": "9.0.0+cpu", "cuda": None,
                                                 "cuda_arches": [], "gpus": [], "root": str(fake)}
    (fake / "version.py").write_text("__version__ = '9.0.0+rocm'\ncuda = None\nhip = '6.0'\n")
    assert torch_flags.read_facts(str(fake)) is None
    (fake / "lib" / "libc10.so").unlink()
    assert torch_flags.read_facts(str(fake)) is None
