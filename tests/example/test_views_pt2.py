"""The example's view ops (specs/: band, rows) under torch.compile: a
function that takes a view, writes it in place and returns the base
compiles with fullgraph=True and gives what the same function with ATen's
views gives (values and gradients), through the generated Functionalize
kernels; a view kernel that returns a new tensor is refused; the same
view registered through torch.library (a Python kernel,
no Functionalize kernel) is refused by torch.  (opcheck of each view op:
test_extension_pt2.py.)"""

import warnings

import pytest

from support import example_build

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.compile

D = dict(dtype=torch.double)
# torch's message for an aliasing custom op that reaches its functionalization fallback
REFUSAL = "Found a custom (non-ATen) operator whose output has alias annotations"


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return example_build.myops(tmp_path_factory)


@pytest.fixture(autouse=True)
def no_compile_caches():
    """Each case compiled afresh: the library's digest in the caches' key
    (docs/python.md) does not see a kernel replaced at run time, as these
    tests replace band's, nor the hand-written inverses traced into the
    graph."""
    with torch._inductor.config.patch(force_disable_caches=True):
        yield


def functions(ops, views):
    """f(x) -> what it returns; `views`: ours or ATen's (band, rows)."""
    band, rows = views

    def write_view_return_base(x):   # the view written by ATen's and by a generated in-place op
        b = x * 1.5
        v = band(b, 1)
        v.mul_(2.0)
        ops.scale_(band(b, -1), 3.0)
        return b

    def write_input_through_view(x):   # the graph's input mutated through the view
        ops.scale_(band(x, 0), 0.5)
        return x.sum()

    def read_rows(x):   # a list of views
        r = rows(x * 2.0)
        return r[0] * r[2] + r[1]

    return {"write_view_return_base": write_view_return_base, "write_input_through_view": write_input_through_view,
            "read_rows": read_rows}


def ours(ops):
    return ops.band, ops.rows


ATEN = (lambda t, k: torch.diagonal(t, k), lambda t: t.unbind(0))


def run(fn, compiled, backend):
    torch._dynamo.reset()
    g = torch.compile(fn, backend=backend, fullgraph=True) if compiled else fn
    x0 = torch.randn(4, 5, **D)
    if fn.__name__ == "write_input_through_view":
        x = x0.clone()
        out = g(x)
        return {"out": out, "input": x}
    x = x0.clone().requires_grad_()
    out = g(x)
    (out * torch.arange(out.numel(), **D).reshape(out.shape)).sum().backward()
    return {"out": out.detach(), "grad": x.grad}


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("name", ["write_view_return_base", "write_input_through_view", "read_rows"])
def test_compiled_fullgraph_gives_atens_results_and_gradients(ops, name, backend):
    torch.manual_seed(0)
    compiled = run(functions(ops, ours(ops))[name], True, backend)
    torch.manual_seed(0)
    eager = run(functions(ops, ours(ops))[name], False, backend)
    torch.manual_seed(0)
    aten = run(functions(ops, ATEN)[name], True, backend)
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(compiled, aten)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_view_of_the_input_returned_by_a_compiled_function(ops, backend):
    """band's result is a view of the input, as diagonal's; a row of rows
    has unbind's values and gradients (whether it is a view of the input
    differs from unbind's: docs/yaml-reference.md#views)."""
    def outcome(fn, compiled):
        torch._dynamo.reset()
        x = torch.arange(20, **D).reshape(4, 5).clone().requires_grad_()   # a base of its own
        out = (torch.compile(fn, backend=backend, fullgraph=True) if compiled else fn)(x)
        (out * torch.arange(1, out.numel() + 1, **D)).sum().backward()
        return {"out": out.detach(), "grad": x.grad, "base is x": out._base is x}
    band = outcome(lambda x: ops.band(x, 1), True)
    assert band["base is x"]
    torch.testing.assert_close(band, outcome(lambda x: torch.diagonal(x, 1), True))
    torch.testing.assert_close(band, outcome(lambda x: ops.band(x, 1), False))
    row, aten_row = outcome(lambda x: ops.rows(x)[2], True), outcome(lambda x: x.unbind(0)[2], True)
    del row["base is x"], aten_row["base is x"]
    torch.testing.assert_close(row, aten_row)


def registered(op):
    """The dispatch keys that have a kernel registered for `op`."""
    return sorted(line.split(":")[0].replace("[alias]", "") for line in torch._C._dispatch_dump(op).splitlines()
                  if ": registered at" in line and not line.startswith("debug"))


def test_the_views_and_their_copies_have_their_generated_kernels(ops):
    """(Without the Functionalize kernels, the tests above fail: torch's
    fallback refuses the views, as it does the torch.library one below.)"""
    for view in ("myops::band", "myops::rows"):
        # (and their vmap plumbing: both declare `vmap:`)
        assert registered(view) == ["ADInplaceOrView", "Autograd", "CompositeExplicitAutograd", "FuncTorchBatched",
                                    "Functionalize"]
        assert registered(view + "_copy") == ["Autograd", "CompositeExplicitAutograd"]


def test_a_view_kernel_returning_a_new_tensor_is_refused(ops):
    """A copy marked as a view would take in-place writes that never reach
    its base while autograd assumes they did: without the check, band
    written in place left its base as it was, and the base's gradient was
    10 where it is 1."""
    lib = torch.library.Library("myops", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
            lib.impl("band", lambda t, k: torch.diagonal(t, k).clone(), "CompositeExplicitAutograd")
        with pytest.raises(RuntimeError, match="myops::band: its kernel returned a tensor that shares no storage "
                                               "with 'self'"):
            ops.band(torch.randn(3, 4, **D), 1)
    finally:
        lib._destroy()
    assert ops.band(torch.randn(3, 4, **D), 1)._is_view()


def test_the_same_view_through_torch_library_is_refused_by_torch_compile():
    """torch.library's way (docs/yaml-reference.md#views, side by side):
    eager works, but nothing functionalizes the view, and torch refuses it."""
    lib = torch.library.Library("pyviews", "DEF")
    try:
        lib.define("band(Tensor(a) self, int k) -> Tensor(a)")

        def band(self, k):
            n, m = self.shape
            s0, s1 = self.stride()
            length = max(0, min(m - k, n) if k >= 0 else min(n + k, m))
            return self.as_strided((length,), (s0 + s1,), self.storage_offset() + (k * s1 if k >= 0 else -k * s0))
        lib.impl("band", band, "CompositeExplicitAutograd")

        def fn(x):
            b = x * 1.5
            torch.ops.pyviews.band(b, 1).mul_(2.0)
            return b
        x = torch.randn(4, 5, **D).requires_grad_()
        torch.testing.assert_close(fn(x), aten_fn(x))  # eager: as_strided's own view tracking
        torch._dynamo.reset()
        with pytest.raises(Exception, match=REFUSAL.replace("(", r"\(").replace(")", r"\)")):
            torch.compile(fn, backend="aot_eager", fullgraph=True)(x)
    finally:
        lib._destroy()


def aten_fn(x):
    b = x * 1.5
    torch.diagonal(b, 1).mul_(2.0)
    return b
