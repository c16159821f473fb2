"""torch.export and AOTInductor of the example's ops (specs/): a module using
a view op (band, rows), an in-place op written through the view (scale_), a
plain op (bmul) and an op with a CUDA kernel (row_sum: on CUDA tensors its
CUDA kernel; that case skips without a CUDA device) is exported and runs as
eager, also functionalized (`run_decompositions()`, which needs the views'
generated Functionalize kernels: plain export keeps the in-place op), then
packaged with AOTInductor and run in a fresh process that has loaded only
the extension's library (and fails without it: the package calls the ops
through the library).  Cost: see docs/testing.md."""

import os
import subprocess
import sys

import pytest

from support import example_build
from support.spec_facts import REPO

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.compile

FRESH = os.path.join(REPO, "tests", "support", "aoti_fresh_process.py")


class Model(torch.nn.Module):
    def forward(self, x, w):
        ops = torch.ops.myops
        b = ops.bmul(x, w)                 # a plain op
        ops.scale_(ops.band(b, 1), 3.0)    # an in-place op written through a view
        rows = ops.rows(b)                 # a list of views
        return ops.row_sum(b), rows[0] * rows[2], ops.band_copy(x, -1)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    example_build.myops(tmp_path_factory)
    return example_build.library(tmp_path_factory, "specs", "myops_ext")


@pytest.fixture(params=["cpu", "cuda"])
def device(request, library):
    if request.param == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("no CUDA device: the CUDA case runs where torch.cuda.is_available() (and the library was "
                        "built with its CUDA kernels)")
        if "CUDA: registered" not in torch._C._dispatch_dump("myops::row_sum"):
            pytest.skip("the library was built without its CUDA kernels (a CPU-only torch, or CUDA=0)")
    return request.param


def inputs(device):
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 6, generator=g).to(device), torch.randn(6, generator=g).to(device)


def names(graph_module):
    return {str(n.target) for n in graph_module.graph.nodes if n.op == "call_function"}


def assert_same(outs, expected):
    assert len(outs) == len(expected)
    for a, b in zip(outs, expected):
        torch.testing.assert_close(a, b)


@pytest.fixture
def exported(device):
    args = inputs(device)
    return torch.export.export(Model(), args), args, Model()(*inputs(device))


def test_export_runs_as_eager(exported):
    ep, args, eager = exported
    assert {"myops.bmul.default", "myops.band.default", "myops.scale_.default", "myops.rows.default",
            "myops.row_sum.default", "myops.band_copy.default"} <= names(ep.graph_module)
    assert_same(ep.module()(*args), eager)


def test_functionalized_export_runs_as_eager(exported):
    ep, args, eager = exported
    functional = ep.run_decompositions()
    ops = names(functional.graph_module)
    # the write through the view made functional (the view regenerated from its base's strides)
    assert "myops.scale_.default" not in ops and "auto_functionalized_v2" in ops and "myops.rows.default" in ops
    assert_same(functional.module()(*args), eager)


def test_aotinductor_package_runs_in_a_fresh_process_with_only_the_library(exported, library, tmp_path):
    ep, args, eager = exported
    package = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "model.pt2"))
    torch.save({"inputs": args, "eager": eager}, tmp_path / "data.pt")
    run = [sys.executable, FRESH, library, package, str(tmp_path / "data.pt")]
    # (torch unpacks the package into a folder of TMPDIR that it leaves behind: the test's own)
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.run(run, capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "outputs equal eager's" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    proc = subprocess.run(run + ["--no-library"], capture_output=True, text=True, env=env)
    assert proc.returncode != 0 and "myops::" in proc.stderr, proc.stdout + proc.stderr[-3000:]
