"""What a caller asks of the generator for one extension, built once at each
entry point (the SCons builders `AutogradFunctions` and `AutogradLibrary`,
load() and load_inline(), a project's build through the backend) from the
arguments as the user gave them, checked there, and passed on whole.

    request = FunctionsRequest.of("nf.yaml", "derivatives.yaml", pch="auto", unity=4)
    request.pch.takes_prelude(TUKind.BUCKET, cold_tus=7, family="gcc")

`Pch` is the one policy for the precompiled prelude (docs/compile-layout.md,
"The precompiled prelude"); every entry point takes the same values with the
same meaning.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from dataclasses import dataclass, field
from typing import Optional

from ..emit.options import EmitOptions, PatchTarget, parse_python
from .buckets import AUTO, parse_unity, prelude_pays
from autograd_scons.base.errors import OptionError
from ..model.stable_target import StableTarget
from ..tree import TUKind


class Pch(enum.Enum):
    """The precompiled prelude (GCC's `.gch`, clang's `.pch`).

    - OFF: no TU takes it.
    - ON: every generated TU, and the caller's `pch_sources`, take it.
    - AUTO: the edit TUs always take it (each formula edit then costs one
      TU against it; the first edit pays the precompile, unless another
      build made the same prelude already), and a cold build's other TUs
      take it only when enough of them do for the precompile to pay
      (layout.prelude_pays: a count per compiler family).
    """
    OFF = "0"
    ON = "1"
    AUTO = AUTO

    @classmethod
    def parse(cls, value) -> "Pch":
        """`pch=` (True, False, "auto") or `PCH=` from a command line (1, 0,
        auto).  Raises OptionError with the reason."""
        if isinstance(value, cls):
            return value
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return cls.ON if value else cls.OFF   # (load() took 1 and 0 as True and False)
        for member in cls:
            if isinstance(value, str) and value == member.value:
                return member
        raise OptionError(f"pch must be 'auto', True or False, not {value!r}")

    def takes_prelude(self, kind: TUKind, cold_tus: int, family: str = "gcc") -> bool:
        """Whether a TU of `kind` is compiled against the prelude, in a build
        whose TUs other than the edit TUs and the digest's (plus the caller's
        own TUs compiled alongside) number `cold_tus`, by a compiler of `family` ("gcc" or
        "clang").  Depends on kinds and counts alone, never on the build's
        history: a setting that flipped with an edit would recompile
        everything in the middle of an edit loop."""
        if kind is TUKind.CACHE_KEY:  # one string, no header: the prelude would be its whole cost
            return False
        if self is not Pch.AUTO:
            return self is Pch.ON
        return kind is TUKind.EDIT or prelude_pays(cold_tus, family)


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
    # The stable target (model/stable_target.py): kernels on PyTorch's stable ABI,
    # built once for every torch from this one on, the autograd as Python;
    # None: the C++ target (libtorch's full API, one torch minor).
    stable: Optional[StableTarget] = None
    # The stable target's twin of `includes`: the Python module of the
    # formulas' own helpers (`myops::sum_to` in Python), a path like the
    # spec files'; read statically, copied beside the generated module
    # (formula/user_helpers.py).  The C++ target reads `includes` instead.
    python_helpers: Optional[str] = None

    @classmethod
    def of(cls, native_functions, derivatives, *, tags=None, namespace=None, unity=AUTO,
           includes=(), pch=False, kernels=True, python=True, patch=None,
           stable=None, python_helpers=None) -> "FunctionsRequest":
        """The request from keywords as the user gives them (strings from a
        command line included).  Raises OptionError naming the bad value;
        an unknown keyword is Python's TypeError."""
        if isinstance(includes, str):
            includes = [includes]
        if isinstance(patch, dict):  # (from_json)
            patch = PatchTarget(patch["functions_h"], tuple(patch["reference"]),
                                tuple((n, w) for n, w in patch["unusable_helpers"]), bool(patch["every"]),
                                tuple(patch["bound_locally"]), bool(patch.get("kernels", False)),
                                tuple(patch.get("complex_ops", ())), tuple(patch.get("only", ())))
        emit = EmitOptions(namespace=namespace, includes=tuple(str(i) for i in includes),
                           kernels=bool(kernels), python=parse_python(python), patch=patch)
        target = StableTarget.parse(stable)
        if target is not None and patch is not None:
            raise OptionError("stable= builds an extension's own ops; a patch of libtorch's Functions is C++")
        helpers = _python_helpers(python_helpers)
        if helpers is not None and target is None:
            raise OptionError(f"python_helpers={helpers!r} names the stable target's Python helpers: give stable= "
                              "too (the C++ target's helpers come from the headers includes= names)")
        return cls(native_functions, derivatives, tags, emit, parse_unity(unity), Pch.parse(pch), target, helpers)

    def to_json(self) -> dict:
        """The request as JSON values (load()'s spec file), for from_json."""
        return {"native_functions": self.native_functions, "derivatives": self.derivatives,
                "tags": self.tags, "namespace": self.emit.namespace, "includes": list(self.emit.includes),
                "kernels": self.emit.kernels, "python": self.emit.python,
                "unity": AUTO if self.unity is None else self.unity, "pch": self.pch.value,
                "patch": dataclasses.asdict(self.emit.patch) if self.emit.patch else None,
                "stable": self.stable.version if self.stable else None,
                "python_helpers": self.python_helpers}

    @classmethod
    def from_json(cls, data: dict) -> "FunctionsRequest":
        data = dict(data)
        return cls.of(data.pop("native_functions"), data.pop("derivatives"), **data)


def _python_helpers(value) -> Optional[str]:
    """`python_helpers=` as a user gives it: None, or the path of one `.py` file."""
    if value is None:
        return None
    text = str(value) if isinstance(value, (str, os.PathLike)) else None
    if not text or text.strip() != text or not text.endswith(".py") or any(c in text for c in "\n\r"):
        raise OptionError(f"python_helpers must be the path of one Python file (helpers.py), not {value!r}")
    return text
