"""A generated folder's part of the build report, from what the generator's
update did (codegen/engine/incremental.py, Result): its units, each with
its state and reason in the vocabulary the English report prints
(codegen/engine/reasons.py), and its TUs with their kinds."""

from __future__ import annotations

from typing import Optional

from autograd_scons.codegen.engine.incremental import Result
from autograd_scons.codegen.tree import TUKind
from .json_schema import TU_KINDS


def units(result: Result) -> list[dict]:
    """Every unit, in emission order, then the removed ones."""
    out = []
    for name in result.units:
        why = result.reasons.get(name)
        state = "regenerated" if name in result.regenerated else "identical" if why is not None else "up_to_date"
        kind = result.kinds.get(name)
        out.append({"name": name, "kind": kind.value if kind is not None else None, "state": state,
                    "reason": why.reason.code if why is not None else None,
                    "renamed_from": why.was if why is not None else None})
    for name in result.removed:
        why = result.reasons.get(name)
        out.append({"name": name, "kind": None, "state": "removed",
                    "reason": why.reason.code if why is not None else None, "renamed_from": None})
    return out


def folder(path: str, result: Result, specs: tuple, includes: tuple, generate_s: float,
           identity: Optional[dict], note: Optional[str] = None) -> dict:
    """The report's record of one generated folder (build_report/json_schema.py, _FOLDER)."""
    native_functions, derivatives, tags = specs
    return {
        "path": path,
        "specs": {"native_functions": native_functions, "derivatives": derivatives, "tags": tags},
        "includes": list(includes),
        "parsed": result.parsed,
        "note": note,
        "units": units(result),
        "tus": [{"path": t.path, "kind": TU_KINDS[t.kind]} for t in result.tus],
        "layout": {"buckets": result.layout.buckets, "edit_tus": len(result.of_kind(TUKind.EDIT)),
                   "alone": list(result.layout.alone)},
        "generate_s": round(generate_s, 4),
        "identity": identity,
    }
