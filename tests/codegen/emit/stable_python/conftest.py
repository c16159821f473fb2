"""The fixture extension of the stable target's Python autograd
(tests/fixtures/stable_python): its ops defined with torch.library (schemas
from its native_functions.yaml, CPU kernels composed of aten ops), then the
generated module imported from a temporary folder, as the stable build
writes it next to the library."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from support.spec_facts import REPO

FIXTURE = os.path.join(REPO, "tests", "fixtures", "stable_python")
NATIVE = os.path.join(FIXTURE, "native_functions.yaml")
DERIVATIVES = os.path.join(FIXTURE, "derivatives.yaml")
HELPERS = os.path.join(FIXTURE, "sp_helpers.py")   # the formulas' own helpers (python_helpers=)

# The kernels below autograd: what a stable-ABI library registers for CPU.
KERNELS = {
    "bmul": lambda s, o: s * o,
    "scaled": lambda s, alpha=2.0: s * alpha,
    "affine": lambda i, w, b=None: i * w + b if b is not None else i * w,
    "row_sum": lambda s: s.sum(-1),
    "myexp": lambda s: s.exp(),
    "sincos_sign": lambda s: (s.sin(), s.cos(), s.sign()),
    "gather_rows": lambda s, i: s.index_select(0, i),
    "masked_scale": lambda s, m: s * m,
    "prod_diff": lambda s, o: (s * o, s - o),
    "sum_dtype": lambda s, dtype=None: s.sum(dtype=dtype),
    "soft_clip": lambda s, *, beta=1.0: (s / beta).tanh() * beta,
    "plain": lambda s: s.clone(),
    "wmul": lambda s, o: s * o,
}


def define(namespace: str):
    """A library defining the fixture's schemas under `namespace`, with the CPU kernels."""
    import torch
    import yaml
    lib = torch.library.Library(namespace, "DEF")
    with open(NATIVE, encoding="utf-8") as f:
        for e in yaml.safe_load(f):
            lib.define(e["func"].split("::", 1)[1])
    for name, kernel in KERNELS.items():
        lib.impl(name, kernel, "CPU")
    return lib


def generated_files(native: str = NATIVE, derivatives: str = DERIVATIVES, namespace: str = "sp",
                    python_helpers: str = HELPERS) -> dict[str, str]:
    from autograd_scons.codegen.engine.stable_python import render_stable_python
    return render_stable_python(native, derivatives, namespace, python_helpers=python_helpers)


def import_generated(folder: str, namespace: str = "sp"):
    path = os.path.join(folder, f"{namespace}_autograd.py")
    spec = importlib.util.spec_from_file_location(f"{namespace}_autograd", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def sp(tmp_path_factory):
    """torch.ops.sp with the generated autograd registered."""
    import torch
    if FIXTURE not in sys.path:
        sys.path.insert(0, FIXTURE)   # sp_fakes, which `fake: {python: ...}` names
    folder = tmp_path_factory.mktemp("sp_generated")
    for name, text in generated_files().items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)
    lib = define("sp")
    module = import_generated(str(folder))
    yield torch.ops.sp
    del module, lib
