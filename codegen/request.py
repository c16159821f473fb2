"""What a caller asks of the generator for one extension, built once at each
entry point (the SCons builders `AutogradFunctions` and `AutogradLibrary`,
load() and load_inline(), a project's build through the backend) from the
arguments as the user gave them, checked there, and passed on whole.

    request = FunctionsRequest.of("nf.yaml", "derivatives.yaml", pch="auto", unity=4)
    request.pch.takes_prelude(TUKind.BUCKET, cold_tus=7, compiler="g++")

`Pch` is the one policy for the precompiled prelude (docs/compile-layout.md,
"The precompiled prelude"); every entry point takes the same values with the
same meaning.
"""

from __future__ import annotations

import enum
import os
import shlex
from dataclasses import dataclass, field
from typing import Optional

from .emit.options import EmitOptions, parse_python
from .layout import AUTO, parse_unity, prelude_pays
from .tree import TUKind


class Pch(enum.Enum):
    """The precompiled prelude (`prelude_impl.h`, GCC's `.gch`).

    - OFF: no TU takes it.
    - ON: every generated TU, and the caller's `pch_sources`, take it.
    - AUTO: the edit TUs always take it (each formula edit then costs one
      TU against it; the first edit pays the precompile), and a cold build's
      other TUs take it only when enough of them do for the precompile to
      pay (layout.prelude_pays); where the compiler cannot use the prelude
      (clang reads no `.gch`), AUTO is OFF.
    """
    OFF = "0"
    ON = "1"
    AUTO = AUTO

    @classmethod
    def parse(cls, value) -> "Pch":
        """`pch=` (True, False, "auto") or `PCH=` from a command line (1, 0,
        auto).  Raises ValueError with the reason."""
        if isinstance(value, cls):
            return value
        if isinstance(value, bool):
            return cls.ON if value else cls.OFF
        for member in cls:
            if isinstance(value, str) and value == member.value:
                return member
        raise ValueError(f"pch must be 'auto', True or False, not {value!r}")

    def resolved(self, compiler: str) -> "Pch":
        """This policy for `compiler` (a command line such as $CXX): AUTO is
        OFF where the compiler cannot read the prelude; ON stays ON."""
        if self is Pch.AUTO and not compiler_reads_prelude(compiler):
            return Pch.OFF
        return self

    def takes_prelude(self, kind: TUKind, cold_tus: int, compiler: str) -> bool:
        """Whether a TU of `kind` is compiled against the prelude, in a build
        whose TUs other than the edit TUs (plus the caller's own TUs compiled
        alongside) number `cold_tus`.  Depends on kinds and counts alone,
        never on the build's history: a setting that flipped with an edit
        would recompile everything in the middle of an edit loop."""
        policy = self.resolved(compiler)
        if policy is not Pch.AUTO:
            return policy is Pch.ON
        return kind is TUKind.EDIT or prelude_pays(cold_tus)


def compiler_reads_prelude(compiler: str) -> bool:
    """GCC's precompiled header format (`.gch`) is what pch.py writes; clang
    reads its own format only."""
    words = shlex.split(compiler or "") or [""]
    return "clang" not in os.path.basename(words[0])


@dataclass(frozen=True)
class FunctionsRequest:
    """One extension's generated Functions: its spec files and every option
    of the generator, the layout and the prelude."""
    native_functions: str
    derivatives: str
    tags: Optional[str] = None
    emit: EmitOptions = field(default_factory=EmitOptions)
    unity: Optional[int] = None    # None: the automatic bucket count; 0: one TU per unit
    pch: Pch = Pch.OFF

    @classmethod
    def of(cls, native_functions, derivatives, *, tags=None, namespace=None, unity=AUTO,
           includes=(), pch=False, kernels=True, python=True) -> "FunctionsRequest":
        """The request from keywords as the user gives them (strings from a
        command line included).  Raises ValueError naming the bad value;
        an unknown keyword is Python's TypeError."""
        if isinstance(includes, str):
            includes = [includes]
        emit = EmitOptions(namespace=namespace, includes=tuple(str(i) for i in includes),
                           kernels=bool(kernels), python=parse_python(python))
        return cls(native_functions, derivatives, tags, emit, parse_unity(unity), Pch.parse(pch))

    def to_json(self) -> dict:
        """The request as JSON values (load()'s spec file), for from_json."""
        return {"native_functions": self.native_functions, "derivatives": self.derivatives,
                "tags": self.tags, "namespace": self.emit.namespace, "includes": list(self.emit.includes),
                "kernels": self.emit.kernels, "python": self.emit.python,
                "unity": AUTO if self.unity is None else self.unity, "pch": self.pch.value}

    @classmethod
    def from_json(cls, data: dict) -> "FunctionsRequest":
        data = dict(data)
        return cls.of(data.pop("native_functions"), data.pop("derivatives"), **data)
