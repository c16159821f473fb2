"""`dispatch:` in an extension's native_functions.yaml (emit/op_kernels/dispatch.py):
the generated header declaring the hand-written kernels, their
registrations, CompositeImplicitAutograd ops without Autograd kernel,
functions without `dispatch:` unchanged, and located errors for bad
input (views: test_views.py)."""

import os
import re
import subprocess
import sys

import pytest

from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.engine.units import load_units
from support.spec_facts import REPO

OPTS = EmitOptions(namespace="ext::autograd")
DERIVATIVES = "- name: twice(Tensor self, Scalar alpha, int[] dims) -> Tensor\n  self: grad * 2\n"



def registered(cpp):
    """(dispatch key, op, kernel) of each registration in a generated op kernel file."""
    return re.findall(r'(\w+)_lib\.impl\("([\w.]+)", TORCH_FN\(([\w:]+)\)\);', cpp)

def render(tmp_path, native, derivatives=DERIVATIVES):
    nf, dv = tmp_path / "native_functions.yaml", tmp_path / "derivatives.yaml"
    nf.write_text(native)
    dv.write_text(derivatives)
    files = {}
    for unit in load_units(str(nf), str(dv)):
        files.update(unit.render(OPTS))
    return files


TWICE = "- func: ext::twice(Tensor self, Scalar alpha, int[] dims) -> Tensor\n"


def test_header_declares_each_kernel_with_the_dispatcher_signature(tmp_path):
    files = render(tmp_path, TWICE + "  dispatch:\n    CPU, CUDA: twice_dense\n    Meta: twice_meta\n")
    h = files["ops/ext_twice.h"]
    assert "namespace ext::native {" in h
    for k in ("twice_dense", "twice_meta"):
        assert f"at::Tensor {k}(const at::Tensor & self, const at::Scalar & alpha, at::IntArrayRef dims);" in h
    assert h.count("twice_dense(") == 1  # one declaration for two keys
    cpp = files["ops/ext_twice.cpp"]
    assert '#include "ext_twice.h"' in cpp
    assert sorted(registered(cpp)) == sorted([
        ("Autograd", "twice", "ext_twice_autograd"), ("CPU", "twice", "::ext::native::twice_dense"),
        ("CUDA", "twice", "::ext::native::twice_dense"), ("Meta", "twice", "::ext::native::twice_meta")])
    for key in ("CPU", "CUDA", "Meta", "Autograd"):
        assert (f'static torch::Library {key}_lib(torch::Library::IMPL, "ext", c10::DispatchKey::{key}, '
                '__FILE__, __LINE__);') in cpp


def test_cuda_registrations_are_left_out_by_builds_without_cuda_kernels(tmp_path):
    # site_scons/autograd_scons/buildenv/cuda_flags.py defines the macro when it leaves the .cu sources out.
    cpp = render(tmp_path, TWICE + "  dispatch:\n    CPU: twice_cpu\n    CUDA: twice_cuda\n")["ops/ext_twice.cpp"]
    guarded = re.findall(r"#ifndef AUTOGRAD_EXT_WITHOUT_CUDA_KERNELS\n(.*?)\n#endif", cpp, re.S)
    assert len(guarded) == 2 and "CUDA_lib(torch::Library::IMPL" in guarded[0]
    assert guarded[1].strip() == 'CUDA_lib.impl("twice", TORCH_FN(::ext::native::twice_cuda));'
    assert "CPU" not in "".join(guarded) and 'CPU_lib.impl("twice"' in cpp


def test_composite_explicit_autograd_keeps_the_autograd_kernel(tmp_path):
    files = render(tmp_path, TWICE + "  dispatch:\n    CompositeExplicitAutograd: twice\n")
    cpp = files["ops/ext_twice.cpp"]
    assert [k for k, _, _ in registered(cpp)] == ["Autograd", "CompositeExplicitAutograd"]
    assert "TwiceBackward0" in cpp


def test_composite_implicit_autograd_gets_no_autograd_kernel(tmp_path):
    files = render(tmp_path, "- func: ext::sq(Tensor self) -> Tensor\n  dispatch:\n"
                             "    CompositeImplicitAutograd: sq\n", derivatives="[]\n")
    cpp = files["ops/ext_sq.cpp"]
    assert " Autograd_lib" not in cpp and "_autograd(" not in cpp
    assert 'def_lib.def("sq(Tensor self) -> Tensor");' in cpp
    assert registered(cpp) == [("CompositeImplicitAutograd", "sq", "::ext::native::sq")]
    assert "at::Tensor sq(const at::Tensor & self);" in files["ops/ext_sq.h"]


def test_without_dispatch_no_kernel_is_declared_or_registered(tmp_path):
    files = render(tmp_path, TWICE)
    assert sorted(p for p in files if p.startswith("ops/")) == ["ops/ext_twice.cpp", "ops/ext_twice.h"]
    cpp = files["ops/ext_twice.cpp"]
    assert [k for k, _, _ in registered(cpp)] == ["Autograd"]
    assert "ext::native" not in cpp and "ext::native" not in files["ops/ext_twice.h"]
    # the header holds the op's caller alone (tests/codegen/emit/op_kernels/test_callers.py)
    assert "at::Tensor twice(const at::Tensor & self, const at::Scalar & alpha, at::IntArrayRef dims);" in \
        files["ops/ext_twice.h"]


BAD = [
    ("  dispatch:\n    CPU: k\n    Sparse: k\n", 4,
     "unknown dispatch key 'Sparse' for an extension op (supported: CPU, CUDA, Meta, "
     "CompositeExplicitAutograd, CompositeImplicitAutograd)"),
    ("  dispatch: twice_cpu\n", 2, "'dispatch' must be a mapping of dispatch keys to kernels"),
    ("  dispatch:\n    CPU: twice-cpu\n", 3, "kernel name 'twice-cpu' for dispatch key 'CPU' is not a C++ identifier"),
    ("  dispatch:\n    Meta: 3\n", 3, "kernel name 3 for dispatch key 'Meta' is not a C++ identifier"),
    ("  dispatch:\n    CPU: new\n", 3, "kernel name 'new' for dispatch key 'CPU' is not a C++ identifier"),
    ("  dispatch:\n    CompositeImplicitAutograd: a\n    CPU: b\n", 2,
     "CompositeImplicitAutograd cannot be combined with other dispatch keys"),
    ("  dispatch:\n    CompositeImplicitAutograd: a\n", 2,
     "a CompositeImplicitAutograd op is differentiated through the ops its kernel calls, but "
     "derivatives.yaml has an entry for it (line 1)"),
]


@pytest.mark.parametrize("dispatch,line,message", BAD, ids=[m.split(" ")[0] + str(i) for i, (_, _, m) in
                                                             enumerate(BAD)])
def test_bad_dispatch_is_one_located_error(tmp_path, dispatch, line, message):
    with pytest.raises(SpecError) as e:
        render(tmp_path, "# the test op\n" + TWICE + dispatch)
    text = str(e.value)
    assert "\n" not in text
    head = (f"{tmp_path / 'native_functions.yaml'}:{line + 1}: "
            f"entry 'ext::twice(Tensor self, Scalar alpha, int[] dims) -> Tensor': ")
    assert text.startswith(head + message), text


@pytest.mark.compile
def test_every_generated_op_file_of_the_example_compiles_together_in_one_tu(tmp_path):
    """The lead compiles op kernels as unity buckets: all of them #included
    into one TU must not collide."""
    from support import cxx
    if not cxx.have_compiler():
        pytest.skip("no C++ compiler")
    out = tmp_path / "gen"
    subprocess.run([sys.executable, "-m", "autograd_scons", "generate", "-q", "--native-functions",
                    os.path.join(REPO, "specs", "native_functions.yaml"), "--derivatives",
                    os.path.join(REPO, "specs", "derivatives.yaml"), "--out", str(out), "--namespace",
                    "myops::autograd", "--include", "myops/backward_helpers.h"], check=True, cwd=REPO)
    ops = sorted(p for p in os.listdir(out / "ops") if p.endswith(".cpp"))
    (out / "unity").mkdir(exist_ok=True)
    tu = out / "unity" / "all_ops.cpp"
    tu.write_text("".join(f'#include "../ops/{p}"\n' for p in ops)
                  + f'#include "{os.path.join(REPO, "specs", "csrc", "kernels.cpp")}"\n')
    proc = subprocess.run([cxx.CXX, *cxx.torch_flags(), *cxx.python_flags(), f"-I{out}",
                           f"-I{os.path.join(REPO, 'specs', 'include')}", "-fsyntax-only", str(tu)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
