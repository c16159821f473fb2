"""Reference differentiability infos computed by torchgen itself.

Not a test module: a helper used by tests and benchmarks. It runs torchgen's
own ``load_derivatives`` and turns the result into the same JSON-able dict
that ``python -m autograd_scons infos`` prints, so the two can be compared directly.
torch/torchgen is imported lazily so that importing this module never
requires torch.
"""

from __future__ import annotations

import functools
from typing import Any


def real_spec_paths() -> tuple[str, str, str]:
    """(native_functions.yaml, tags.yaml, derivatives.yaml) shipped with torchgen."""
    from support.spec_facts import torch_specs
    return torch_specs()


def _saved_attribute(sa: Any) -> dict:
    from torchgen.api.types import SpecialArgName

    name = sa.nctype.name
    # NamedCType.name is either a str or a SpecialArgName enum member
    # (possibly_redundant_memory_format); the enum is not JSON-able.
    if isinstance(name, SpecialArgName):
        name = name.name
    return {"name": name, "type": sa.nctype.type.cpp_type(), "expr": sa.expr}


def _info(info: Any, key: str) -> dict:
    return {
        "name": info.name,
        "func": str(info.func.func),
        "dispatch_key": key,
        "op": info.op,
        "derivatives": [
            {
                "formula": d.formula,
                "var_names": list(d.var_names),
                "saved_inputs": [_saved_attribute(sa) for sa in d.saved_inputs],
                "saved_outputs": [_saved_attribute(sa) for sa in d.saved_outputs],
            }
            for d in info.derivatives
        ],
        "forward_derivatives": [
            {"formula": f.formula, "var_names": list(f.var_names)}
            for f in info.forward_derivatives
        ],
        "all_saved_inputs": [_saved_attribute(sa) for sa in info.all_saved_inputs],
        "all_saved_outputs": [_saved_attribute(sa) for sa in info.all_saved_outputs],
        "args_with_derivatives": [b.name for b in info.args_with_derivatives],
        "non_differentiable_arg_names": list(info.non_differentiable_arg_names),
        # None or a list of bools (copied so callers cannot mutate torchgen's data)
        "output_differentiability": (
            None
            if info.output_differentiability is None
            else list(info.output_differentiability)
        ),
    }


def torchgen_load(native_functions: str, tags: str, derivatives: str, foreach: bool = False) -> tuple[dict, int]:
    """torchgen's infos (FunctionSchema -> {dispatch key -> info}), read
    afresh, and how many load_derivatives returned: with `foreach`,
    match_differentiability_info has then appended the derived foreach infos
    (as gen_autograd does in a real build).

    torchgen memoises by *path* at three levels: load_derivatives (per
    (derivatives, native_functions) paths), parse_native_yaml (per native
    path only) and parse_tags_yaml (global dict + functools.cache). They are
    all cleared, so each call really re-reads the given files, even when a
    file at the same path has changed since the last call."""
    import torchgen.gen as gen
    from torchgen.api import cpp
    from torchgen.api.autograd import match_differentiability_info
    from torchgen.packaged.autograd import load_derivatives as ld

    ld._GLOBAL_LOAD_DERIVATIVE_CACHE.clear()
    gen._GLOBAL_PARSE_NATIVE_YAML_CACHE.clear()
    gen._GLOBAL_PARSE_TAGS_YAML_CACHE.clear()
    gen.parse_tags_yaml.cache_clear()
    infos, _used_dispatch_keys = ld.load_derivatives(derivatives, native_functions, tags)
    loaded = len(infos)
    if foreach:
        fns = sorted(gen.parse_native_yaml(native_functions, tags).native_functions,
                     key=lambda f: cpp.name(f.func))
        match_differentiability_info(fns, infos)
    return infos, loaded


@functools.lru_cache(maxsize=None)
def real_torchgen() -> tuple[dict, int]:
    """torchgen_load of torch's installed specs with the foreach infos, once
    per session (callers must not mutate it)."""
    return torchgen_load(*real_spec_paths(), foreach=True)


def to_json(infos: dict, n: int | None = None) -> dict:
    """The first n of torchgen's infos in our JSON shape (`python -m autograd_scons infos`)."""
    return {"infos": [_info(info, key) for per_key in list(infos.values())[:n] for key, info in per_key.items()]}


_MISSING = object()


def _diff(path: str, ours: Any, ref: Any, out: list[str]) -> None:
    """Append 'path: ours=.. ref=..' for each leaf difference (recursive)."""
    if isinstance(ours, dict) and isinstance(ref, dict):
        for k in list(ref) + [k for k in ours if k not in ref]:
            _diff(
                f"{path}.{k}" if path else k,
                ours.get(k, _MISSING),
                ref.get(k, _MISSING),
                out,
            )
    elif isinstance(ours, list) and isinstance(ref, list):
        if len(ours) != len(ref):
            # Lengths differ: show the whole list rather than an index cascade.
            out.append(f"{path} (len {len(ours)} vs {len(ref)}): ours={ours!r} ref={ref!r}")
            return
        for i, (o, r) in enumerate(zip(ours, ref)):
            _diff(f"{path}[{i}]", o, r, out)
    elif type(ours) is not type(ref) or ours != ref:
        o = "<missing>" if ours is _MISSING else repr(ours)
        r = "<missing>" if ref is _MISSING else repr(ref)
        out.append(f"{path}: ours={o} ref={r}")


def compare_infos(ours: dict, ref: dict, limit: int = 20) -> list[str]:
    """Compare two infos JSON dicts info by info; return up to `limit` messages.

    An empty list means equal. Infos are compared positionally (same order is
    part of the contract).
    """
    msgs: list[str] = []
    o_infos, r_infos = ours.get("infos", []), ref.get("infos", [])
    if len(o_infos) != len(r_infos):
        msgs.append(f"info count: ours={len(o_infos)} ref={len(r_infos)}")
    for i, (o, r) in enumerate(zip(o_infos, r_infos)):
        diffs: list[str] = []
        _diff("", o, r, diffs)
        label = f"#{i} {r.get('name')} ({r.get('dispatch_key')})"
        msgs.extend(f"{label} field {d}" for d in diffs)
        if len(msgs) >= limit:
            break
    if len(o_infos) > len(r_infos):
        for i, o in enumerate(o_infos[len(r_infos):], len(r_infos)):
            msgs.append(f"#{i} extra in ours: {o.get('name')} ({o.get('dispatch_key')})")
    elif len(r_infos) > len(o_infos):
        for i, r in enumerate(r_infos[len(o_infos):], len(o_infos)):
            msgs.append(f"#{i} missing in ours: {r.get('name')} ({r.get('dispatch_key')})")
    return msgs[:limit]
