"""The generator's commands of `python -m autograd_scons` (infos, generate,
signatures): `add_commands` puts them on the tool's parser (autograd_scons's
__main__.py), which runs the one parsed and turns its errors into one line.

Each command imports what it runs when it runs (the imports inside the
`_cmd_*` functions): `--help` loads no parser or emitter.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from autograd_scons.base.errors import OptionError


def _spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--native-functions", required=True, metavar="YAML",
                   help="native_functions.yaml: the operator schemas")
    p.add_argument("--tags", metavar="YAML", default=None,
                   help="tags.yaml: the valid tags (optional; without it any tag is accepted)")
    p.add_argument("--derivatives", required=True, metavar="YAML",
                   help="derivatives.yaml: the backward and forward formulas")


def _cmd_infos(args: argparse.Namespace) -> int:
    from .parse.load_derivatives import load_infos  # (on use: see the module's docstring)
    infos = load_infos(args.native_functions, args.derivatives, args.tags)
    # One info per line: readable, diffable, and the C encoder (no indent) is fast.
    sys.stdout.write('{"infos": [\n' + ",\n".join(json.dumps(i.as_json()) for i in infos) + "\n]}\n")
    return 0


def _cmd_signatures(args: argparse.Namespace) -> int:
    from .emit.op_kernels.signatures import kernel_signatures  # (on use: see the module's docstring)
    from .parse.extension_ops import kernel_units
    from .parse.native_functions import load_tags, parse_native_functions
    from .parse.yaml_io import gc_paused, read_text
    with gc_paused():
        native = parse_native_functions(args.native_functions, read_text(args.native_functions),
                                        load_tags(args.tags))
    units = kernel_units(native, (), formulas=False)
    if args.stable:  # the stable target's declarations (torch::stable::Tensor, double, int64_t, ...)
        from .emit.stable_registration import render_kernels_header
        sys.stdout.write(render_kernels_header(units, os.path.basename(args.native_functions)))
        return 0
    sys.stdout.write(kernel_signatures(units, os.path.basename(args.native_functions)))
    return 0


def _unity(text: str):
    from .engine.buckets import parse_unity  # (on use: see the module's docstring)
    try:
        return parse_unity(text)
    except OptionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _cmd_generate(args: argparse.Namespace) -> int:
    import time  # (this command's imports: see the module's docstring)

    from autograd_scons.base.lock import lock_folder, remove_made_folder
    from .engine.functions_request import FunctionsRequest
    from .engine.incremental import update
    from .engine.update_summary import foreign_line, layout_line, report

    try:
        request = FunctionsRequest.of(args.native_functions, args.derivatives, tags=args.tags,
                                      namespace=args.namespace, includes=args.include, unity=args.unity,
                                      kernels=not args.no_kernels, python=not args.no_python)
    except OptionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    made = lock_folder(args.out, say=lambda m: print(m, file=sys.stderr, flush=True))
    try:
        result = update(args.out, request, jobs=args.jobs, override=args.override)
    except BaseException:
        if made:
            remove_made_folder(args.out)
        raise
    if result.warning:
        print(f"warning: {result.warning}", file=sys.stderr)
    if result.foreign:
        print(f"warning: {foreign_line(result)}", file=sys.stderr)
    if not args.quiet:
        print(f"generated in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    print(f"{args.out}: {report(result)}; {layout_line(result)}")
    return 0


def add_commands(sub) -> None:
    """The generator's subcommands, on `sub` (an argparse subparsers action)."""
    infos = sub.add_parser("infos", help="print the differentiability infos as JSON")
    _spec_args(infos)
    infos.set_defaults(run=_cmd_infos)

    gen = sub.add_parser("generate", help="write the C++ autograd Functions (one .h/.cpp per op)")
    _spec_args(gen)
    gen.add_argument("--out", required=True, metavar="DIR",
                     help="output folder, kept up to date incrementally as the SCons tool keeps "
                          "it (a manifest records what was generated from what)")
    gen.add_argument("--namespace", default=None, metavar="NS",
                     help="C++ namespace of the classes, unique to the library (default: "
                          "<op namespace>::autograd from the specs' ops outside aten, "
                          "autograd_ext::generated for ATen's alone); not libtorch's own "
                          "torch::autograd::generated")
    gen.add_argument("--unity", type=_unity, default=None, metavar="N|auto",
                     help="compile layout: N unity buckets unity/bucket_<i>.cpp, 0 for one TU per "
                          "unit, auto (default) for a count from the number of units and --jobs")
    gen.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                     help="parallel compiles the layout is for (default: the CPU count)")
    gen.add_argument("--override", action="store_true",
                     help="you link, while the summary says units override their old text, each "
                          "bucket object holding it as a weakened copy (python -m autograd_scons weaken): an "
                          "edited unit then leaves its bucket unrecompiled")
    gen.add_argument("--no-kernels", action="store_true",
                     help="no registration or Autograd kernels for the ops outside aten")
    gen.add_argument("--no-python", action="store_true",
                     help="no Python bindings of the Functions (python/): for a library used from C++ "
                          "alone, which then needs neither libtorch_python nor Python's symbols")
    gen.add_argument("--include", action="append", default=[], metavar="HEADER",
                     help="header with helpers the formulas call, included by every definition TU "
                          "(repeatable); for PyTorch's own specs: torch/csrc/autograd/FunctionsManual.h")
    gen.add_argument("-q", "--quiet", action="store_true", help="print only the summary line")
    gen.set_defaults(run=_cmd_generate)

    sig = sub.add_parser("signatures", help="print the C++ declaration of every kernel native_functions.yaml "
                                            "names under dispatch:, as the generated ops/<ns>_<op>.h declare them")
    sig.add_argument("native_functions", metavar="YAML", help="native_functions.yaml: the operator schemas")
    sig.add_argument("--tags", metavar="YAML", default=None,
                     help="tags.yaml: the valid tags (optional; without it any tag is accepted)")
    sig.add_argument("--stable", action="store_true",
                     help="the stable target's declarations (torch::stable::Tensor; docs/stable-abi.md)")
    sig.set_defaults(run=_cmd_signatures)
