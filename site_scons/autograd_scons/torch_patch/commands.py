"""The commands `patch-torch` and `run-patched` of `python -m autograd_scons`
(docs/patching-torch.md, docs/cli.md)."""

from __future__ import annotations

import argparse
import sys


def add_commands(sub) -> None:
    """`patch-torch` and `run-patched`, on `sub` (an argparse subparsers action)."""
    p = sub.add_parser("patch-torch", help="build a library that replaces the installed torch's autograd "
                       "Functions by those of edited specs (run programs with it through run-patched)")
    p.add_argument("--native-functions", metavar="YAML", help="default: the running torch's own (torchgen's)")
    p.add_argument("--tags", metavar="YAML", help="default: the running torch's own")
    p.add_argument("--derivatives", metavar="YAML", help="default: the running torch's own")
    p.add_argument("--all", action="store_true", dest="every",
                   help="every Function that can be patched, not only those the specs change")
    p.add_argument("--kernels", action="store_true",
                   help="also replace the Autograd kernel of every ATen op the tool can generate one for, so "
                        "that torch's ops run through the tool's kernels and Functions alone (libtorch warns once "
                        "that its kernels are overridden)")
    p.add_argument("--only", metavar="NAMES", default="",
                   help="with --all: only these Functions (comma-separated, or @FILE with one a line), and with "
                        "--kernels only the kernels of the ops that create them (a smaller build, e.g. of the "
                        "Functions a program's graphs reach)")
    p.add_argument("--functions-manual", metavar="CPP",
                   help="torch's FunctionsManual.cpp (of the installed version), compiled into the patch, for "
                        "formulas that use the helpers libtorch does not export")
    p.add_argument("-o", "--out", metavar="DIR", help="the patch's folder (default: a folder of the cache, "
                   "per torch and compiler, printed)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel compiles (default: the CPUs)")
    p.add_argument("-v", "--verbose", action="store_true", help="print the build's commands")
    p.set_defaults(run=_cmd_patch)

    r = sub.add_parser("run-patched", help="run a command with a patch-torch folder's library preloaded")
    r.add_argument("folder", metavar="DIR")
    r.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]")
    r.set_defaults(run=_cmd_run)


def _cmd_patch(args) -> int:
    from autograd_scons.base.lock import FolderError, LockTimeout
    from autograd_scons.torch_patch.build import patch_torch
    from autograd_scons.torch_patch.identity import PatchError
    try:
        result = patch_torch(args.out, native_functions=args.native_functions, tags=args.tags,
                             derivatives=args.derivatives, every=args.every, kernels=args.kernels,
                             only=_names(args.only), functions_manual=args.functions_manual,
                             jobs=args.jobs, verbose=args.verbose)
    except (PatchError, FolderError, LockTimeout) as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    state = "up to date" if result.up_to_date else f"{len(result.compiled)} compiled"
    shown = ", ".join(result.edited[:5]) + (", ..." if len(result.edited) > 5 else "")
    edited = f" ({len(result.edited)} edited: {shown})" if result.edited else " (none edited)"
    own = f", {len(result.own)} of them the patch's own classes" if result.own else ""
    kernels = f", {len(result.kernels)} Autograd kernels" if result.kernels else ""
    print(f"patch-torch: {result.library}: {len(result.patched)} Functions{edited}{own}{kernels}; {state}")
    for why, names in sorted(result.left_out.items(), key=lambda kv: -len(kv[1])):
        print(f"patch-torch: left out {len(names)}: {why} (e.g. {', '.join(names[:3])})")
    for why, names in sorted(result.kernels_left_out.items(), key=lambda kv: -len(kv[1])):
        print(f"patch-torch: kernels kept as libtorch's {len(names)}: {why} (e.g. {', '.join(names[:3])})")
    print(f"patch-torch: run with it: python -m autograd_scons run-patched {result.folder} -- CMD [ARGS...]")
    return 0


def _names(given: str) -> tuple:
    """--only's names: a comma-separated list, or @FILE holding one a line
    (PatchError when FILE cannot be read)."""
    from autograd_scons.torch_patch.identity import PatchError
    if given.startswith("@"):
        try:
            with open(given[1:], encoding="utf-8") as f:
                given = f.read().replace("\n", ",")
        except (OSError, UnicodeDecodeError) as e:
            raise PatchError(f"patch-torch: --only {given}: {getattr(e, 'strerror', None) or e}") from None
    return tuple(n.strip() for n in given.split(",") if n.strip())


def _cmd_run(args) -> int:
    from autograd_scons.torch_patch.identity import PatchError
    from autograd_scons.torch_patch.preload import run_patched
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        return run_patched(args.folder, command)
    except PatchError as e:
        print(str(e), file=sys.stderr)
        return 2
