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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m codegen",
                                description="Autograd Function generator for PyTorch-style yaml specs.")
    sub = p.add_subparsers(dest="command", required=True)
    infos = sub.add_parser("infos", help="print the differentiability infos as JSON")
    _spec_args(infos)
    infos.set_defaults(run=_cmd_infos)
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
