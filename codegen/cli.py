"""`python -m codegen`: the generator's command line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

from .errors import SpecError


def _spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--native-functions", required=True, metavar="YAML",
                   help="native_functions.yaml: the operator schemas")
    p.add_argument("--tags", metavar="YAML", default=None,
                   help="tags.yaml: the valid tags (optional; without it any tag is accepted)")
    p.add_argument("--derivatives", required=True, metavar="YAML",
                   help="derivatives.yaml: the backward and forward formulas")


def _cmd_infos(args: argparse.Namespace) -> int:
    from .load_derivatives import load_infos
    infos = load_infos(args.native_functions, args.derivatives, args.tags)
    # One info per line: readable, diffable, and the C encoder (no indent) is fast.
    sys.stdout.write('{"infos": [\n' + ",\n".join(json.dumps(i.as_json()) for i in infos) + "\n]}\n")
    return 0


def _count(text: str) -> int:
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return n


def _cmd_generate(args: argparse.Namespace) -> int:
    import time

    from .emit.functions import render_shared
    from .emit.options import EmitOptions
    from .generate import load_units, render_unit
    from .writer import write_tree

    try:
        opts = EmitOptions(namespace=args.namespace, includes=tuple(args.include), unity=args.unity)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    tty = sys.stderr.isatty() and not args.quiet
    t0 = time.perf_counter()
    units = load_units(args.native_functions, args.derivatives, args.tags)
    t1 = time.perf_counter()
    files: dict[str, str] = {}
    for n, unit in enumerate(units, 1):
        files.update(render_unit(unit, opts))
        if tty and n % 100 == 0:
            print(f"\rrendered {n}/{len(units)} units", end="", file=sys.stderr, flush=True)
    ops = [u.op for u in units if "::" not in u.op]  # Functions, not op kernels
    kernels = sum(1 for p in files if p.startswith("ops/"))
    files.update(render_shared(ops, opts))
    t2 = time.perf_counter()
    report = write_tree(args.out, files)
    t3 = time.perf_counter()

    def op_of(rel: str):
        d, _, name = rel.partition("/")
        return name.split(".", 1)[0] if d == "functions" else None

    written = {op_of(r) for r in report.written} - {None}
    removed = {op_of(r) for r in report.removed} - {None} - set(ops)
    shared = sum(1 for r in report.written if op_of(r) is None and not r.startswith("ops/"))
    if tty:
        print("\r" + " " * 40 + "\r", end="", file=sys.stderr)
    if not args.quiet:
        print(f"loaded specs in {t1 - t0:.2f} s, rendered {len(files)} files in {t2 - t1:.2f} s, "
              f"wrote in {t3 - t2:.2f} s", file=sys.stderr)
    print(f"{len(ops)} Functions: {len(written)} written, {len(ops) - len(written)} unchanged, "
          f"{len(removed)} removed (shared files: {shared} written"
          + (f"; {kernels} op kernels" if kernels else "") + ")")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m codegen",
                                description="Autograd Function generator for PyTorch-style yaml specs.")
    sub = p.add_subparsers(dest="command", required=True)
    infos = sub.add_parser("infos", help="print the differentiability infos as JSON")
    _spec_args(infos)
    infos.set_defaults(run=_cmd_infos)

    gen = sub.add_parser("generate", help="write the C++ autograd Functions (one .h/.cpp per op)")
    _spec_args(gen)
    gen.add_argument("--out", required=True, metavar="DIR",
                     help="output folder; only files whose content changed are rewritten, and "
                          "stale generated files under functions/ and unity/ are deleted")
    gen.add_argument("--namespace", default="autograd_ext::generated", metavar="NS",
                     help="C++ namespace of the classes (default: %(default)s); not libtorch's own "
                          "torch::autograd::generated")
    gen.add_argument("--unity", type=_count, default=0, metavar="N",
                     help="also write N unity TUs unity/bucket_<i>.cpp (default: 0, none)")
    gen.add_argument("--include", action="append", default=[], metavar="HEADER",
                     help="header with helpers the formulas call, included by every definition TU "
                          "(repeatable); for PyTorch's own specs: torch/csrc/autograd/FunctionsManual.h")
    gen.add_argument("-q", "--quiet", action="store_true", help="print only the summary line")
    gen.set_defaults(run=_cmd_generate)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
