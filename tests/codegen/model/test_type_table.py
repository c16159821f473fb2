"""No schema the tool accepts can abort a process (issue 52): an op for every
type a schema can give an argument (plain, optional, list, written, written
and optional) and every kind of return is either refused at its yaml line
when parsed, or generated, built and loaded in a child process, where every
op is registered with its kernels.  A kernel declared with a type the
dispatcher does not infer for its schema (`Tensor(a!)?` as `at::Tensor &`
once) made torch's registration throw from a static initialiser: the
process ended with SIGABRT as the library loaded, and no `try:` caught it.
A registration that still fails is an ImportError naming the op."""

import json
import re
import subprocess
import sys

import pytest

from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.parse.native_functions import parse_native_functions
from support.load_helpers import real_compiler, run

pytestmark = pytest.mark.compile

# Argument types: every base type, its optional and list forms where the
# schema language has them, the written forms.
ARGUMENTS = [
    "Tensor", "Tensor(a!)", "Tensor?", "Tensor(a!)?", "Tensor[]", "Tensor(a!)[]", "Tensor?[]",
    "int", "int?", "int[]", "int[2]", "int[]?", "int?[]", "SymInt", "SymInt?", "SymInt[]", "SymInt[]?",
    "float", "float?", "float[]", "float[]?", "bool", "bool?", "bool[3]", "bool[]",
    "Scalar", "Scalar?", "Scalar[]", "Scalar?[]", "ScalarType", "ScalarType?", "str", "str?", "str[]",
    "Layout", "Layout?", "Device", "Device?", "MemoryFormat", "MemoryFormat?", "Generator?", "DeviceIndex",
    "QScheme", "Storage", "Stream", "SymBool", "SymBool?", "Dimname", "GraphModule",
]
# Returns: one tensor, several, a list, none, a written argument's alias, and the other values.
RETURNS = [
    "Tensor", "(Tensor, Tensor)", "(Tensor a, int b)", "Tensor[]", "()", "Tensor?", "Tensor?[]",
    "int", "int?", "int[]", "float", "float[]", "bool", "bool[]", "Scalar", "ScalarType", "SymInt", "SymInt[]",
    "SymBool", "str", "Device", "Layout", "Generator", "Generator?", "Stream", "QScheme", "MemoryFormat",
]


def _rows():
    """(op name, schema, whether its derivatives entry is `self: grad`)."""
    rows = [(f"a{i}", f"ty::a{i}(Tensor self, {t} x) -> Tensor", True) for i, t in enumerate(ARGUMENTS)]
    rows += [(f"r{i}", f"ty::r{i}(Tensor self) -> {t}", False) for i, t in enumerate(RETURNS)]
    # a written argument returned (in-place and out=), and written lists
    rows += [("w0", "ty::w0_(Tensor(a!) self, Tensor? other=None) -> Tensor(a!)", False),
             ("w1", "ty::w1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", False),
             ("w2", "ty::w2(Tensor self, Tensor(a!)? sink=None, int? n=None) -> Tensor", True)]
    return rows


def _entry(name, schema, grad):
    return f"- func: {schema}\n  dispatch:\n    CPU: k_{name}\n"


def _refusal(tmp_path, name, schema):
    """The located line refusing the op, or None where it is accepted."""
    path = tmp_path / f"one_{name}.yaml"
    path.write_text(_entry(name, schema, False))
    try:
        parse_native_functions(str(path), path.read_text(), None)
    except SpecError as e:
        return str(e)
    return None


# The child: load(), then each op's registration as the dispatcher has it.
_CHECKS = r"""
import json, torch
out = {}
for name in NAMES:
    qual = "ty::" + name + ("." + OVERLOADS[name] if OVERLOADS[name] else "")
    schema = str(torch._C._dispatch_find_schema_or_throw("ty::" + name, OVERLOADS[name]).schema())
    out[name] = [schema, str(torch._C.parse_schema(DECLARED[name])),
                 torch._C._dispatch_has_kernel_for_dispatch_key(qual, "CPU"),
                 torch._C._dispatch_has_kernel_for_dispatch_key(qual, "Autograd")]
print("REGISTERED " + json.dumps(out))
"""


def test_every_accepted_type_registers_and_loads(tmp_path):
    accepted, refused = [], {}
    for name, schema, grad in _rows():
        why = _refusal(tmp_path, name, schema)
        if why is None:
            accepted.append((name, schema, grad))
        else:
            refused[name] = why
    # each refusal is one located line at the op's `func:`
    for name, why in refused.items():
        assert "\n" not in why and why.startswith(f"{tmp_path / f'one_{name}.yaml'}:1: entry 'ty::"), why
    assert {n for n, _, _ in accepted} >= {"a3", "w2"}   # Tensor(a!)? is accepted
    nf = tmp_path / "native_functions.yaml"
    nf.write_text("".join(_entry(n, s, g) for n, s, g in accepted))
    (tmp_path / "derivatives.yaml").write_text("".join(
        f"- name: {s.split('::', 1)[1]}\n  self: grad\n" for _, s, g in accepted if g))
    # Each kernel defined from the declaration `signatures` prints, its body a throw.
    printed = subprocess.run([sys.executable, "-m", "autograd_scons", "signatures", str(nf)], capture_output=True,
                             text=True, check=True).stdout
    definitions = re.sub(r"^(\s*\S.*\bk_\w+\(.*\));$", lambda m: m[1] + ' { throw std::logic_error("not called"); }',
                         printed, flags=re.M)
    (tmp_path / "kernels.cpp").write_text("#include <stdexcept>\n" + definitions)
    call = {"name": "ty", "native_functions": str(nf), "derivatives": str(tmp_path / "derivatives.yaml"),
            "sources": [str(tmp_path / "kernels.cpp")], "build_directory": str(tmp_path / "build")}
    names = {n: (s.split("(", 1)[0].split("::", 1)[1].partition(".")) for n, s, _ in accepted}
    checks = (f"NAMES = {[p[0] for p in names.values()]!r}\n"
              f"DECLARED = {({names[n][0]: s for n, s, _ in accepted})!r}\n"
              f"OVERLOADS = {({p[0]: p[2] for p in names.values()})!r}\n" + _CHECKS)
    env = real_compiler()
    proc = run(call, env, then=checks, check=False, fresh=True, timeout=1800)
    assert proc.returncode >= 0, f"the child ended by signal {-proc.returncode}:\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("REGISTERED "))
    registered = json.loads(line[len("REGISTERED "):])
    for name, schema, grad in accepted:
        got, declared, cpu, autograd = registered[names[name][0]]
        assert got == declared, (name, got, declared)   # (as torch spells the declared schema: DeviceIndex is int)
        assert cpu, f"{schema}: no CPU kernel"
        expected = grad or ".out(" in schema   # (an out= overload keeps ATen's refusal of grad: its own kernel)
        assert autograd == expected, f"{schema}: Autograd kernel {'missing' if expected else 'unexpected'}"
    print(f"{len(accepted)} schemas built and loaded, {len(refused)} refused at their line: "
          + "; ".join(f"{_rows_by_name()[n]}: {w.split(': ', 2)[-1]}" for n, w in sorted(refused.items())))


def _rows_by_name():
    return {n: s for n, s, _ in _rows()}
