"""Generation for the stable target (FunctionsRequest.stable): bring an
output folder's `stable/` in line with the specs.

    result = update_stable("gen", request)   # result.sources: what to compile

It writes three files, each only where its bytes differ, so SCons compiles
only what changed:
- `stable/kernels.h`, `stable/registration.cpp` (emit/stable_registration.py),
  from native_functions.yaml alone: a formula edit leaves them, and so
  every object, untouched;
- `stable/<ns>_autograd.py` and its run-time support
  `stable/stable_autograd_runtime.py` (and the helpers its formulas call:
  FunctionsManual's package, a copy of the module `python_helpers=` names,
  whose edit rewrites that copy alone), the ops' autograd as Python from
  derivatives.yaml (codegen/emit/stable_python/, through
  engine/stable_python.py); the build writes the module next to the library
  with the line that loads the library first, and the support beside it
  (tool/stable_build.py).

The specs of an extension are small, so this parses them every time (no
manifest fast path: tens of milliseconds).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from .functions_request import FunctionsRequest
from ..tree import KERNELS_H, REGISTRATION_CPP
from .writer import same_bytes, write_files

STABLE_FOLDER = "stable"


@dataclass
class StableResult:
    """What one stable update wrote (or, on a dry run, would write)."""
    out_dir: str
    sources: list[str]                   # the TUs to compile, relative to out_dir
    python: str                          # the autograd module, relative to out_dir
    support: list                        # the files it imports beside it, relative to out_dir
    ops: list[str]                       # `ns::op.overload`, in yaml order
    rewritten: list[str] = field(default_factory=list)   # files whose bytes changed
    kernels: list = field(default_factory=list)          # (ns, kernel name) declared by dispatch:
    # op -> Why its generated text changed (its Python section, or the schemas
    # and declarations every op shares); the ops absent are unchanged
    reasons: dict = field(default_factory=dict)
    dry_run: bool = False

    def update_result(self):
        """This update as the incremental engine's Result, for the closing
        report and the JSON build report (their units are the ops, kind
        kernel; their one TU the registration, kind stable)."""
        from ..tree import TUKind, TranslationUnit
        from .incremental import Result
        from .buckets import Layout
        from .units import Kind
        return Result(self.out_dir, list(self.ops), {op: Kind.KERNEL for op in self.ops},
                      [TranslationUnit(rel, TUKind.STABLE) for rel in self.sources], Layout(None, 0),
                      regenerated=[op for op in self.ops if op in self.reasons], reasons=dict(self.reasons),
                      parsed=True, dry_run=self.dry_run)


def _python_autograd(request: FunctionsRequest, namespace: str) -> dict:
    """{relpath: text} of the ops' generated autograd: the module first,
    then its run-time support (engine/stable_python.py)."""
    from .stable_python import render_stable_python
    from ..emit.stable_python import module_name
    files = render_stable_python(request.native_functions, request.derivatives, namespace,
                                 python_helpers=request.python_helpers)
    module = f"{module_name(namespace)}.py"
    return {f"{STABLE_FOLDER}/{name}": files[name] for name in [module] + sorted(set(files) - {module})}


def update_stable(out_dir: str, request: FunctionsRequest, *, dry_run: bool = False) -> StableResult:
    """Raises SpecError on bad input, located at its yaml line, before
    anything is written."""
    from ..parse.extension_ops import kernel_units  # (the parser and the emitter: on use)
    from ..emit.stable_registration import render_kernels_header, render_registration
    from ..parse.native_functions import load_tags, parse_native_functions
    from ..parse.yaml_io import read_text
    from autograd_scons.base.errors import SpecError
    try:
        text = read_text(request.native_functions)
    except OSError as e:
        raise SpecError(f"cannot read file: {e.strerror}", request.native_functions) from None
    native = parse_native_functions(request.native_functions, text, load_tags(request.tags))
    units = kernel_units(native, (), formulas=False)
    yaml = os.path.basename(request.native_functions)
    namespaces = sorted({u.func.namespace for u in units})
    if len(namespaces) != 1:
        raise SpecError(f"the stable target builds the ops of one namespace, not {len(namespaces)} "
                        f"({', '.join(namespaces) or 'none'})", request.native_functions)
    python = _python_autograd(request, namespaces[0])
    module = next(iter(python))
    files = {KERNELS_H: render_kernels_header(units, yaml),
             REGISTRATION_CPP: render_registration(units, yaml, f"{os.path.basename(module)} (next to the library)"),
             **python}
    changed = {rel: text for rel, text in files.items()
               if not same_bytes(os.path.join(out_dir, rel), text.encode())}
    reasons = _changed_ops(out_dir, [u.op for u in units], module, files, changed)   # (before writing)
    if changed and not dry_run:
        os.makedirs(os.path.join(out_dir, STABLE_FOLDER), exist_ok=True)
        write_files(out_dir, changed)
    kernels = [(u.func.namespace, name) for u in units if u.func.dispatch is not None
               for name in u.func.dispatch.names()]

    return StableResult(out_dir, [REGISTRATION_CPP], module, list(python)[1:], [u.op for u in units],
                        sorted(changed), kernels, reasons, dry_run)


def _sections(text: str, ops: list) -> dict:
    """op -> its part of the generated module: from the line `# <op>: ...`
    that opens it to the next op's."""
    starts = {f"# {op}: ": op for op in ops}
    out: dict[str, str] = {}
    current = None
    for line in text.splitlines(keepends=True):
        opened = next((op for head, op in starts.items() if line.startswith(head)), None)
        current = opened or current
        if current is not None:
            out[current] = out.get(current, "") + line
    return out


def _changed_ops(out_dir: str, ops: list, module: str, files: dict, changed: dict) -> dict:
    """op -> Why (reasons.py) for each op whose generated text this update
    changes: all of them when the schemas or declarations did (or on the
    first update), else those whose section of the Python module did."""
    from .reasons import Reason, Why
    if not changed:
        return {}
    if KERNELS_H in changed or REGISTRATION_CPP in changed:
        first = not os.path.exists(os.path.join(out_dir, REGISTRATION_CPP))
        return {op: Why(Reason.NO_MANIFEST if first else Reason.NATIVE) for op in ops}
    if module not in changed:
        return {}
    try:
        with open(os.path.join(out_dir, module), encoding="utf-8") as f:
            old = _sections(f.read(), ops)
    except OSError:
        old = {}
    new = _sections(files[module], ops)
    return {op: Why(Reason.ENTRY) for op in ops if old.get(op) != new.get(op)}


def library_module(library_file: str, autograd_text: str, target: Optional[str] = None) -> str:
    """The Python module written next to a stable library: it loads the
    library beside it (by file name, so the pair can move together), then
    registers the ops' autograd."""
    name = os.path.basename(library_file)
    return (f"# @generated by autograd-functions-scons for {name} (the stable target"
            f"{', torch >= ' + target if target else ''}): do not edit.\n"
            "import os as _os\n\nimport torch as _torch\n\n"
            f"_torch.ops.load_library(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), {name!r}))\n\n"
            + autograd_text)
