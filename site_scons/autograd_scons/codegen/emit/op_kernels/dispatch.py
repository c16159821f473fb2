"""The registration side of an extension op's `dispatch:` (parsed and
checked by parse/extension_keys.py): the part of `ops/<stem>.h` that
declares every named kernel with the dispatcher's C++ signature (what ATen's
NativeFunctions.h is for ATen), and the (key, kernel) pairs the op's TU
registers (a `torch::Library` IMPL), so the hand-written code only defines
the kernels.
"""

from __future__ import annotations

from typing import Optional

from ...model.native import Dispatch, NativeFunction
from ...templates import load


def declarations(f: NativeFunction, d: Dispatch, signature: tuple[str, str], more: Optional[str] = None) -> list[str]:
    """The part of `ops/<stem>.h` that declares the kernels the extension
    writes for `f` (and `more`: a view's inverse)."""
    ret, params = signature
    return load("op_native_kernels.h").lines(
        keys=", ".join(k for k, _ in d.kernels) + ("; the view's inverse" if more else ""),
        native_ns=f"{f.namespace}::native",
        declarations=[f"{ret} {name}({params});" for name in d.names()] + ([more] if more else []))


def registrations(f: NativeFunction, d: Dispatch) -> list[tuple[str, str]]:
    """(dispatch key, kernel) for each hand-written kernel of `f`."""
    return [(key, f"::{f.namespace}::native::{name}") for key, name in d.kernels]
