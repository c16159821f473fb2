"""From Python, the example's generated Functions look like ATen's (real
compiler: the example built once per session, tests/support/example_build.py).

For every Function of the specs (tests/support/spec_facts.py; each needs a case in
tests/support/extension_checks.py, which the ops are called through, recording
their arguments): its type's name, `isinstance(grad_fn, Node)`, its
`_saved_*` / `_raw_saved_*` properties against what torchgen's own
`process_function` writes for its saved values (tests/support/python_reference.py), the values read back,
saved-tensor hooks and release after backward.  Then names that clash
(ATen's, another library's, the same class twice) with two small libraries
compiled here, and `PYTHON=0`: no Python symbol at all.
"""

import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

from support import cxx
from support import example_build
from support import extension_checks as checks
from support import python_reference as ref
from autograd_scons.codegen.engine.units import load_units
from support.scons_helpers import clone, scons
from support.spec_facts import REPO, example_ops

pytestmark = pytest.mark.compile

SPECS = os.path.join(REPO, "specs")
EXAMPLE = example_ops(SPECS)
INFOS = {u.name: u.subject for u in load_units(os.path.join(SPECS, "native_functions.yaml"),
                                                 os.path.join(SPECS, "derivatives.yaml"), kernels=False)}
PREFIXES = ("_saved_", "_raw_saved_")
TWICE = "backward through the graph a second time"


class Recording:
    """torch.ops.myops, recording each call: (its arguments by name, its outputs)."""

    def __init__(self, target, calls=None):
        self._target, self.calls = target, [] if calls is None else calls

    def __getattr__(self, name):   # an op, or an overload of one (`ops.scale.out`)
        return Recording(getattr(self._target, name), self.calls)

    def __call__(self, *args, **kwargs):
        out = self._target(*args, **kwargs)
        t = self._target
        schema = (t.default if isinstance(t, torch._ops.OpOverloadPacket) else t)._schema
        bound = dict(zip([a.name for a in schema.arguments], args), **kwargs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        names = [r.name or "result" for r in schema.returns]
        self.calls.append((bound, dict(zip(names, outs))))
        return out


def saved_of(info):
    return [(a, out) for out, attrs in ((False, info.all_saved_inputs), (True, info.all_saved_outputs))
            for a in attrs]


def run_case(ops, name):
    """(grad_fn, case inputs, arguments by name, outputs by name, the case's fn) of a fresh call."""
    rec = Recording(ops)
    fn, _, inputs, function = checks.cases(rec)[name]
    out = fn(*inputs)
    first = out[0] if isinstance(out, (tuple, list)) else out
    args, outs = rec.calls[-1]
    return first.grad_fn, inputs, args, outs, fn


def same(value, want):
    if isinstance(want, torch.Tensor):
        return isinstance(value, torch.Tensor) and torch.equal(value, want)
    if isinstance(want, (list, tuple)):
        return isinstance(value, tuple) and len(value) == len(want) and all(map(same, value, want))
    return value == want


def expected_value(attr, is_output, args, outs):
    """What `_saved_<attr>` must read back, from the call's arguments and
    outputs, or None where the saved expression is not one of those."""
    expr = attr.expr
    if is_output:
        return outs[expr] if expr in outs else None
    if expr in args:
        return args[expr]
    m = re.fullmatch(r"(\w+)\.sym_sizes\(\)", expr)
    if m and isinstance(args.get(m.group(1)), torch.Tensor):
        return tuple(args[m.group(1)].shape)
    return None


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return example_build.myops(tmp_path_factory)


def cases_of(function):
    names = [n for n, c in checks.cases(Recording(torch.ops.myops)).items() if c[3] == function]
    assert names, f"{function} has no case in tests/support/extension_checks.py: add one"
    return names


@pytest.mark.parametrize("function", EXAMPLE.functions)
def test_grad_fn_is_typed_and_shows_what_torchgen_rules_give(ops, function):
    info = INFOS[function]
    want = set(ref.torchgen_properties(info.all_saved_inputs, info.all_saved_outputs))
    for case in cases_of(function):
        g, _, args, outs, _ = run_case(ops, case)
        assert type(g).__name__ == function and g.name() == function
        assert getattr(torch._C._functions, function) is type(g)
        assert isinstance(g, torch.autograd.graph.Node)
        assert {n for n in dir(g) if n.startswith(PREFIXES)} == want, case
        assert g.next_functions and isinstance(g.metadata, dict)   # the default Node properties
        checked = 0
        for attr, is_output in saved_of(info):
            value = expected_value(attr, is_output, args, outs)
            if value is not None and f"_saved_{attr.name}" in want:
                assert same(getattr(g, f"_saved_{attr.name}"), value), (case, attr.name)
                checked += 1
        assert checked or not want, f"{case}: no saved value could be checked"


def _hook_everything(g):
    counts = {"pack": 0, "unpack": 0}

    def pack(t):
        counts["pack"] += 1
        return t.clone()

    def unpack(t):
        counts["unpack"] += 1
        return t
    raws = [getattr(g, n) for n in dir(g) if n.startswith("_raw_saved_")]
    saved = [s for r in raws for s in (r if isinstance(r, tuple) else (r,))]
    for s in saved:
        s.register_hooks(pack, unpack)
    return counts, len(saved)


def _backward(fn, inputs, hook=False):
    out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    counts, n = _hook_everything(outs[0].grad_fn) if hook else (None, 0)
    total = sum(o.sum() for o in outs if o.requires_grad)
    return torch.autograd.grad(total, inputs), outs[0].grad_fn, counts, n


def test_saved_tensor_hooks_run_and_release_raises_for_every_op_with_a_saved_tensor(ops):
    with_tensor = [f for f in EXAMPLE.functions if any(p.startswith("_raw_saved_") for p in ref.torchgen_properties(
        INFOS[f].all_saved_inputs, INFOS[f].all_saved_outputs))]
    assert with_tensor
    for function in with_tensor:
        for case in cases_of(function):
            g, inputs, _, _, fn = run_case(ops, case)
            plain, _, _, _ = _backward(fn, inputs)
            hooked, g, counts, n = _backward(fn, inputs, hook=True)
            assert n and counts["pack"] == n and counts["unpack"] >= n, (case, counts, n)
            for a, b in zip(plain, hooked):
                torch.testing.assert_close(a, b)
            # after backward without retain_graph, every saved tensor is released
            for name in [n for n in dir(g) if n.startswith("_raw_saved_")]:
                with pytest.raises(RuntimeError, match=TWICE):
                    getattr(g, "_saved_" + name[len("_raw_saved_"):])


# ---------------------------------------------------------------- clashes

NF = """- func: {ns}::mul(Tensor self, Tensor other) -> Tensor
  variants: function
  dispatch:
    CPU: mul_cpu

- func: {ns}::scale(Tensor self, float alpha) -> Tensor
  variants: function
  dispatch:
    CPU: scale_cpu
"""
D = """- name: mul(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self

- name: scale(Tensor self, float alpha) -> Tensor
  self: grad * alpha * {k}
"""
KERNELS = """#include <ATen/ATen.h>
namespace {ns}::native {{
at::Tensor mul_cpu(const at::Tensor& self, const at::Tensor& other) {{ return self * other; }}
at::Tensor scale_cpu(const at::Tensor& self, double alpha) {{ return self * alpha; }}
}}
"""


def _library(root, ns, k):
    """Library `root/lib<ns>.so` of ops `<ns>::mul` (MulBackward0, a name ATen
    holds) and `<ns>::scale` (ScaleBackward0, whose backward multiplies by `k`
    as well), Functions in `<ns>::autograd`: (library, its bindings' object)."""
    d = root / ns
    d.mkdir()
    (d / "nf.yaml").write_text(NF.format(ns=ns))
    (d / "d.yaml").write_text(D.format(k=k))
    (d / "kernels.cpp").write_text(KERNELS.format(ns=ns))
    r = subprocess.run([sys.executable, "-m", "autograd_scons", "generate", "--native-functions", str(d / "nf.yaml"),
                        "--derivatives", str(d / "d.yaml"), "--out", str(d / "gen"), "--namespace",
                        f"{ns}::autograd", "--unity", "1", "-q"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d


def _compile_all(a, b):
    """a's library as two objects (its bindings apart: the test links them
    again alone), b's as one: each a TU of its sources #included, since
    torch's headers are most of each compile."""
    flags = ["-O0", "-w", *cxx.torch_flags(), *cxx.python_flags()]
    sources = ("gen/unity/bucket_0.cpp", "gen/cache_key.cpp", "kernels.cpp")
    tus = [(a, "rest", sources), (a, "bindings", ("gen/python/bindings_0.cpp",)),
           (b, "all", (*sources, "gen/python/bindings_0.cpp"))]
    cmds = []
    for d, name, included in tus:
        (d / f"{name}.cpp").write_text("".join(f'#include "{d / src}"\n' for src in included))
        cmds.append([cxx.CXX, *flags, f"-I{d / 'gen'}", "-c", str(d / f"{name}.cpp"), "-o", str(d / f"{name}.o")])
    for r in cxx.run_all(cmds):
        assert r.returncode == 0, str(r)


def _link(out, objects):
    libdir = os.path.join(os.path.dirname(torch.__file__), "lib")
    r = cxx.run([cxx.CXX, "-shared", "-o", str(out), *map(str, objects), f"-L{libdir}", f"-Wl,-rpath,{libdir}",
                 "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"])
    assert r.returncode == 0, str(r)
    return str(out)


CLASH_SCRIPT = """
import sys, torch
a_lib, b_lib, again = sys.argv[1:]
torch.ops.load_library(a_lib)
torch.ops.load_library(b_lib)
F = torch._C._functions
x, y = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
aten = type((x * y).grad_fn)
for ns, k in (("clash_a", 2.0), ("clash_b", 3.0)):
    m = getattr(torch.ops, ns).mul(x, y).grad_fn
    s_out = getattr(torch.ops, ns).scale(x, 1.5)
    s = s_out.grad_fn
    # MulBackward0 is ATen's: both take their qualified name; ScaleBackward0 is free for the first
    assert type(m).__name__ == ns + "_autograd_MulBackward0" and m.name() == "MulBackward0", type(m)
    want = "ScaleBackward0" if ns == "clash_a" else "clash_b_autograd_ScaleBackward0"
    assert type(s).__name__ == want, type(s)
    assert getattr(F, type(m).__name__) is type(m) and getattr(F, type(s).__name__) is type(s)
    assert isinstance(m, torch.autograd.graph.Node) and isinstance(s, torch.autograd.graph.Node)
    assert torch.equal(m._saved_other, y) and s._saved_alpha == 1.5
    # each library's backward is its own (a type_info mix-up would show here)
    (gx,) = torch.autograd.grad(s_out.sum(), x)
    assert torch.allclose(gx, torch.full_like(x, 1.5 * k)), (ns, gx)
assert F.MulBackward0 is aten and F.ScaleBackward0 is not aten
try:
    torch.ops.load_library(again)
except OSError as e:
    while e.__cause__ is not None:   # OSError from ctypes' SystemError from ours
        e = e.__cause__
    print(type(e).__name__ + ": " + str(e))
else:
    print("loaded")
"""


def test_clashing_names_take_qualified_ones_and_the_same_class_twice_fails_the_load(tmp_path):
    a, b = _library(tmp_path, "clash_a", 2), _library(tmp_path, "clash_b", 3)
    # (cache_key.cpp: the digest support.cpp, in the bucket, adds to torch.compile's cache key tag)
    _compile_all(a, b)
    libs = [_link(tmp_path / "libclash_a.so", [a / "rest.o", a / "bindings.o"]),
            _link(tmp_path / "libclash_b.so", [b / "all.o"])]
    # A second library defining clash_a's classes again (its bindings alone, the
    # rest from the first library, which it is linked to): it must not register.
    again = _link(tmp_path / "libagain.so", [a / "bindings.o", libs[0]])
    r = subprocess.run([sys.executable, "-c", CLASH_SCRIPT, *libs, again], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == (
        "ImportError: cannot register the Python type of autograd Function clash_a::autograd::MulBackward0: "
        "another loaded library defines the same class (its type: <class 'clash_a_autograd_MulBackward0'>); "
        "give one of them another namespace"), r.stdout


# --------------------------------------------------------- python=False

_PY_SYMBOL = re.compile(r"(^|::)(_?Py[A-Z_]|THP)|pybind11|torch::autograd::(registerCppFunction|_initFunctionPyTypeObject)")


def python_symbols(lib):
    out = subprocess.run(["nm", "-D", "-u", "-C", lib], capture_output=True, text=True, check=True).stdout
    undefined = [line.split(None, 1)[-1].strip() for line in out.splitlines() if line.strip()]
    needed = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
    return [s for s in undefined if _PY_SYMBOL.search(s)], "libtorch_python" in needed


def test_python_false_needs_no_python_symbol(tmp_path_factory, tmp_path):
    with_python = example_build.library(tmp_path_factory, "specs", "myops_ext")
    symbols, needs = python_symbols(with_python)
    assert needs and any(s.startswith("THPVariable_Wrap") for s in symbols), symbols   # the check can see them
    root = clone(tmp_path / "repo")
    scons(root, "UNITY=1", "-j2", "OPT=-O0", "PYTHON=0")
    lib = os.path.join(root, "build", "example", "myops_ext.so")
    assert python_symbols(lib) == ([], False)
    assert not os.path.exists(os.path.join(root, "build", "example", "gen", "python", "bindings_0.cpp"))
    # and it still works, its grad_fn untyped
    probe = textwrap.dedent(f"""
        import torch
        torch.ops.load_library({lib!r})
        x = torch.randn(3, requires_grad=True)
        y = torch.ops.myops.cube(x)
        y.sum().backward()
        assert torch.allclose(x.grad, 3 * x.detach() ** 2)
        print(type(y.grad_fn).__name__, y.grad_fn.name())
    """)
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == ["CppFunction", "CubeBackward0"], r.stderr[-2000:]
