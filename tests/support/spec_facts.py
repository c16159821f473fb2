"""Facts the tests check against, derived from the specs and torch's installed
headers rather than written down in each test (not a test module; conftest.py
serves them as session fixtures).

The counts come from torch's own files, independently of our generator:

  functions        classes in torch's installed generated/Functions.h (711 for 2.13)
  foreach_derived  of those, the Foreach* classes no derivatives entry names:
                   what torchgen derives for out-of-place foreach ops (62)
  entries_by_key   derivatives.yaml entries, one per dispatch key (701)
  view_copies      entries whose op has a `<op>_copy` twin in
                   native_functions.yaml without an entry of its own: the
                   {view}_copy infos torchgen synthesises (45)
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/support/ -> the checkout
from autograd_scons.buildenv import torch_flags  # the one place torch's spec paths are found



def _yaml(path: str) -> list:
    with open(path) as f:
        return yaml.load(f, Loader=yaml.CSafeLoader)


def _op(signature: str) -> str:
    """`name.overload` of a schema string."""
    return signature.split("(", 1)[0]


@functools.lru_cache(maxsize=None)
def torch_specs() -> tuple[str, str, str]:
    return torch_flags.torch_specs()


@dataclass(frozen=True)
class TorchCounts:
    functions: int
    foreach_derived: int
    entries_by_key: int
    view_copies: int

    @property
    def from_derivatives(self) -> int:
        """Functions generated from derivatives.yaml entries (view copies included)."""
        return self.functions - self.foreach_derived

    @property
    def infos(self) -> int:
        """Differentiability infos load_derivatives returns (torchgen's and ours)."""
        return self.entries_by_key + self.view_copies


@functools.lru_cache(maxsize=None)
def torch_counts() -> TorchCounts:
    from support.functions_reference import installed_functions_h, read_structs
    nf, _, d = torch_specs()
    with open(installed_functions_h()) as f:
        classes = read_structs(f.read())
    entries, natives = _yaml(d), _yaml(nf)

    def keys(e):
        return len(e.get("dispatch") or {"Default": None})
    foreach_entries = sum(keys(e) for e in entries if e["name"].startswith("_foreach"))
    named = {_op(e["name"]) for e in entries}
    native_ops = {_op(f["func"]) for f in natives}
    view_copies = 0
    for e in entries:
        base, dot, overload = _op(e["name"]).partition(".")
        twin = f"{base}_copy{dot}{overload}"
        if twin in native_ops and twin not in named:
            view_copies += keys(e)
    return TorchCounts(functions=len(classes),
                       foreach_derived=sum(c.startswith("Foreach") for c in classes) - foreach_entries,
                       entries_by_key=sum(keys(e) for e in entries), view_copies=view_copies)


@dataclass(frozen=True)
class ExampleOps:
    functions: tuple[str, ...]   # the Function classes, e.g. BmulBackward0
    natives: tuple[str, ...]     # native functions with a kernel, e.g. myops::scale.out
    kernels: tuple[str, ...]     # their TU stems, e.g. myops_scale_out
    forward: tuple[str, ...] = ()  # the Functions whose entry has a forward formula

    def objects(self, buckets: int, python: bool = True) -> list[str]:
        """The objects a cold build with `buckets` unity buckets compiles (+ the
        hand-written kernels.cpp, + with `python` the Functions' binding TUs,
        + the digest of the generated code, codegen/emit/cache_key.py); 0: one
        per unit."""
        from autograd_scons.codegen.emit.python_bindings.binding_units import sources
        units = [f"bucket_{i}.os" for i in range(buckets)] if buckets else \
            [f + ".os" for f in self.functions + self.kernels] + ["support.os"]   # (emit/functions/support.py)
        bindings = [os.path.basename(s)[:-len(".cpp")] + ".os" for s in sources(len(self.functions))] if python else []
        return sorted(units + ["kernels.os", "cache_key.os"] + bindings)


def _is_view(entry: dict) -> bool:
    """An op returning a view (`-> Tensor(a)`, `-> Tensor(a)[]`) with kernels
    of its own: the tool adds its `_copy` op (docs/yaml-reference.md#views)."""
    returns = entry["func"].split(") -> ", 1)[1]
    implicit = "CompositeImplicitAutograd" in (entry.get("dispatch") or {"CompositeImplicitAutograd": None})
    return "Tensor(" in returns and "!" not in returns and not implicit


def _view_copy(entry: dict) -> str:
    name, dot, overload = _op(entry["func"]).partition(".")
    return f"{name}_copy{dot}{overload}"


def _has_forward_formula(entry: dict) -> bool:
    """Read from the yaml entry itself, not from the generator: a forward
    formula's key is `result` or names outputs (`sin, cos`)."""
    returns = entry["name"].split(") -> ", 1)[1].strip("()")
    outputs = {r.split()[-1] for r in returns.split(", ") if " " in r} | {"result"}
    return any(all(v.strip() in outputs for v in str(key).split(",")) for key in entry)


@functools.lru_cache(maxsize=None)
def example_ops(folder: str) -> ExampleOps:
    """Natives from the yaml itself; Function names from our generator (their
    naming is checked against torchgen's on torch's specs elsewhere)."""
    from support.functions_reference import load_op_infos
    nf, d = os.path.join(folder, "native_functions.yaml"), os.path.join(folder, "derivatives.yaml")
    entries = _yaml(nf)
    natives = tuple(sorted([_op(f["func"]) for f in entries] + [_view_copy(f) for f in entries if _is_view(f)]))
    infos = load_op_infos(nf, d)
    return ExampleOps(functions=tuple(sorted(i.op for i in infos)), natives=natives,
                      kernels=tuple(sorted(n.replace("::", "_").replace(".", "_") for n in natives)),
                      forward=tuple(sorted(i.op for i in infos if _has_forward_formula(i.entry))))
