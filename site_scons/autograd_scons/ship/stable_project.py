"""A project's stable target (docs/stable-abi.md): the one switch of a
project is pyproject.toml's

    [tool.autograd-scons]
    stable = "2.10"     # the oldest torch the one build loads in

read by the SConstruct's `extension.Package` (what it compiles) and by the
wheel backend (what the wheel requires and how it is tagged), so `scons`
and `pip install .` build the same thing.  A stable wheel:
- requires `torch>=<target>`, no minor pin: its library imports only the
  stable C shims (the build audits it), which later torch versions keep;
- is tagged `cp39-abi3-<platform>`: the library uses no Python C API at all
  (no libtorch_python, no Python symbol), and its Python files are plain;
- needs no `merge-wheels`: one wheel serves every torch from the target on.
"""

import os
from typing import Optional

from autograd_scons.base.errors import OptionError
from autograd_scons.codegen.model.stable_target import StableTarget

TABLE = "autograd-scons"
ABI3_TAG = "cp39-abi3"


class StableConfigError(OptionError):
    """pyproject.toml's stable switch is not a version: one line naming it."""


def stable_of(data: dict, path: str = "pyproject.toml") -> Optional[StableTarget]:
    """The target of pyproject.toml's parsed `data`, None for the C++ target."""
    value = ((data.get("tool") or {}).get(TABLE) or {}).get("stable")
    try:
        return StableTarget.parse(value)
    except OptionError as e:
        raise StableConfigError(f"{path}: [tool.{TABLE}] {e}") from None


def project_stable(project: str) -> Optional[StableTarget]:
    """The target of the project folder's pyproject.toml (None without one)."""
    path = os.path.join(project, "pyproject.toml")
    if not os.path.isfile(path):
        return None
    import sys
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    with open(path, "rb") as f:
        return stable_of(tomllib.load(f), path)


def torch_requirement(target: StableTarget) -> str:
    return f"torch>={target.version}"
