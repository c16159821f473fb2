"""A kernel that an extension's `dispatch:` declares for it to define, as
plain values: the manifest (engine/manifest.py) keeps them, so a build
that parses nothing still checks them against the linked library
(tool/kernel_check.py).  On its own, apart from the model it is made from
(extension_op.py's `declared_kernels`): every SCons run reads the
manifest, and most import nothing of the model."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeclaredKernel:
    """`<namespace>::native::<name>`, with where it is declared and its C++
    signature."""
    namespace: str
    name: str
    key: str        # the dispatch key it is registered under
    op: str         # `ns::op.overload`
    file: str
    line: int       # the line of its dispatch key
    ret: str
    params: tuple[str, ...]

    @property
    def symbol(self) -> str:
        return f"{self.namespace}::native::{self.name}"

    def as_json(self) -> list:
        return [self.namespace, self.name, self.key, self.op, self.file, self.line, self.ret, list(self.params)]

    @classmethod
    def from_json(cls, row: list) -> "DeclaredKernel":
        ns, name, key, op, file, line, ret, params = row
        if not (all(isinstance(x, str) for x in (ns, name, key, op, file, ret)) and isinstance(line, int)
                and isinstance(params, list) and all(isinstance(p, str) for p in params)):
            raise ValueError("bad declared kernel")
        return cls(ns, name, key, op, file, line, ret, tuple(params))
