"""The translator's differential over torch's own formulas (issue 59 item 5):
tests/codegen/formula/test_torch_formulas.py.

1. torch 2.13's derivatives.yaml through the project's parser (infos with
   their formulas and saved values), every backward formula through the
   translator (translations()).
2. OpInfo's samples (op_db, float64) run forward and backward under a
   dispatch mode that records every ATen call below autograd, its
   arguments and outputs (record_calls()): the calls whose op has an info
   are the cases.
3. Each case (compare_case()): libtorch's gradient (the op again on leaf
   copies, autograd.grad with a seeded random cotangent) against the
   translated formulas evaluated on the same inputs, outputs and
   cotangents, the saved values computed by translating their own
   expressions (`self.sym_sizes()` -> `self.shape`).

    python -m support.formula_diff [-v] [--ops a,b] [--samples K]
"""

from __future__ import annotations

import argparse
import sys
import warnings
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional

from autograd_scons.buildenv import torch_flags
from autograd_scons.base.errors import SpecError
from autograd_scons.codegen.formula import callees
from autograd_scons.codegen.formula.derivatives import translate_derivative
from autograd_scons.codegen.parse.load_derivatives import infos_from_specs, load_specs


@dataclass
class Formula:
    """One backward formula of torch's and what became of it."""
    op: str            # the Function (`MulBackward0`)
    func: str          # the schema's name (`mul.Tensor`)
    var_names: tuple
    formula: str
    line: int
    python: Optional[str] = None
    refused: str = ""
    saved: dict = field(default_factory=dict)     # saved name -> Python of its expression
    compared: int = 0
    bitwise: int = 0
    close: int = 0
    failures: list = field(default_factory=list)


def translations(helpers) -> tuple[list, list[Formula], dict]:
    """(infos, every backward formula of torch's with its translation, callee table)."""
    nf, tags, der = torch_flags.torch_specs()
    specs = load_specs(nf, der, tags)
    infos = [i for i in infos_from_specs(specs) if i.op is not None]
    table = callees(specs.native.functions)
    out = []
    for info in infos:
        for d in info.derivatives:
            f = Formula(info.op, str(info.func.func.name), d.var_names, d.original_formula, d.line)
            try:
                t = translate_derivative(info, d, helpers=helpers, functions=table, helper_prefix="H.")
                f.python, f.saved = t.python, dict(t.saved)
            except SpecError as e:
                f.refused = e.message.replace("cannot translate ", "", 1)
            out.append(f)
    return infos, out, table


def helper_shares(helpers) -> tuple[str, list[str]]:
    """What the helpers add: the formulas translated without any, with all,
    and for each helper how many translated formulas call it (a formula
    calling two counts for both)."""
    _, bare, _ = translations(())
    _, full, _ = translations(helpers)
    without = sum(f.python is not None for f in bare)
    with_all = sum(f.python is not None for f in full)
    uses = {h: sum(f"H.{h}(" in (f.python or "") or any(f"H.{h}(" in v for v in f.saved.values()) for f in full)
            for h in helpers}
    line = (f"translated without helpers {without}/{len(bare)} ({100 * without / len(bare):.0f}%), "
            f"with the {len(helpers)} helpers {with_all} ({100 * with_all / len(full):.0f}%)")
    return line, [f"HELPER {h}: {n} formulas" for h, n in sorted(uses.items(), key=lambda x: (-x[1], x[0]))]


# ------------------------------------------------------------ recording


def record_calls(op_names=None, samples_per_op=2, dtype_name="float64"):
    """{aten op name (`mul.Tensor`): [(args, kwargs), ...]} of the calls
    OpInfo samples make, forward and backward, detached copies."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map

    calls: dict = defaultdict(list)

    def keep(x):
        return x.detach().clone() if isinstance(x, torch.Tensor) else x

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func._schema.name.split("::", 1)[1] + (f".{func._overloadname}" if func._overloadname != "default" else "")
            if func.namespace == "aten" and len(calls[name]) < 4 * samples_per_op:
                calls[name].append(tree_map(keep, (args, kwargs)))
            return func(*args, **kwargs)

    dtype = getattr(torch, dtype_name)
    for op in op_db:
        if op_names and op.name not in op_names:
            continue
        if not op.supports_autograd or dtype not in op.supported_dtypes("cpu"):
            continue
        torch.manual_seed(zlib.crc32(op.full_name.encode()))
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=True))[:samples_per_op]
        except Exception:
            continue
        for s in samples:
            try:
                with Recorder():
                    out = op(s.input, *s.args, **s.kwargs)
                    outs = [t for t in torch.utils._pytree.tree_leaves(out)
                            if isinstance(t, torch.Tensor) and t.requires_grad]
                    ins = [t for t in torch.utils._pytree.tree_leaves((s.input, s.args, s.kwargs))
                           if isinstance(t, torch.Tensor) and t.requires_grad]
                    if outs and ins:
                        torch.autograd.grad(outs, ins, [torch.randn_like(t) for t in outs], allow_unused=True,
                                            create_graph=True)
            except Exception:
                continue
    return calls


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("-v", action="store_true")
    p.add_argument("--ops", default="")
    p.add_argument("--samples", type=int, default=2)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    from support.formula_compare import run
    line, lines, _ = run(set(filter(None, a.ops.split(","))), a.samples)
    print(line)
    if a.v:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
