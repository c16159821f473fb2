"""The Functions generated from torch 2.13's own specs, in our namespace,
compile against torch 2.13's installed headers: all of them through a few unity
TUs (syntax only), and a few per-op TUs alone to object code, which shows
each .cpp is self-contained (own header + prelude only).  Like the long
proofs, a CI run compiles this commit's share of the unity TUs
(support/proof_share.py: successive commits cover them all;
AGF_PROOF_SHARE=all compiles every one)."""

import os
import time

import pytest

from support import cxx
from support.proof_share import share
from support.torchgen_reference import real_spec_paths

from autograd_scons.codegen.emit.options import TORCH_MANUAL_INCLUDES, EmitOptions
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.codegen.engine.incremental import update


BUCKETS = 6
# retain_variables + tensor lists; a derived foreach loop; an optional-tensor
# list; a view (Node base) with a dispatch-key variant
ALONE = ["CudnnRnnBackward0", "ForeachAddBackward1Scalar", "IndexBackward0",
         "SelectBackwardAutogradNestedTensor0"]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("torch_functions"))
    nf, tags, d = real_spec_paths()
    update(root, FunctionsRequest(nf, d, tags, EmitOptions(includes=TORCH_MANUAL_INCLUDES), unity=BUCKETS))
    return root


@pytest.mark.compile
@pytest.mark.skipif(not cxx.have_compiler(), reason=f"no C++ compiler {cxx.CXX!r}: install g++ or set CXX, "
                    "or deselect with -m 'not compile'")
def test_generated_torch_functions_compile(out):
    flags = cxx.torch_flags() + ["-O0", "-w"]
    part, parts = share()
    mine = [i for i in range(BUCKETS) if i % parts == part]
    cmds = [[cxx.CXX, *flags, "-fsyntax-only", f"unity/bucket_{i}.cpp"] for i in mine]
    cmds += [[cxx.CXX, *flags, "-c", f"functions/{op}.cpp", "-o", f"{op}.o"] for op in ALONE]
    t = time.perf_counter()
    results = cxx.run_all(cmds, cwd=out)
    failed = [str(r) for r in results if r.returncode != 0]
    assert failed == [], "\n\n".join(failed)
    for op in ALONE:
        assert os.path.getsize(os.path.join(out, f"{op}.o")) > 0
    print(f"compiled unity TUs {mine} of {BUCKETS} + {len(ALONE)} per-op TUs in {time.perf_counter() - t:.0f} s")


@pytest.mark.compile
def test_buckets_cover_every_function_once(out, torch_counts):
    included = []
    for i in range(BUCKETS):
        with open(os.path.join(out, "unity", f"bucket_{i}.cpp")) as f:
            included += [line.split('"')[1] for line in f if line.startswith("#line 1 ")]
    assert sorted(included) == sorted(f"../functions/{n}" for n in os.listdir(os.path.join(out, "functions"))
                                      if n.endswith(".cpp"))
    assert len(included) == torch_counts.functions


@pytest.mark.compile
def test_per_op_tu_includes_only_its_header_and_prelude(out):
    for op in ALONE:
        with open(os.path.join(out, "functions", f"{op}.cpp")) as f:
            includes = [line.strip() for line in f if line.startswith("#include")]
        assert includes == [f'#include "{op}.h"', '#include "../prelude_impl.h"', '#include "../load_check.h"',
                            "#include AGF_DERIVATIVE_LINES_H"]   # the formulas' lines (codegen/emit/lines.py)
