"""`python -m autograd_scons COMMAND`: the tool's command line.

    generate   write the C++ autograd Functions of a pair of spec files
    infos      print the differentiability infos as JSON
    signatures print the C++ declaration of every kernel a native_functions.yaml names
    weaken     copy a bucket's object with the edit TUs' symbols made weak
    new        write a new extension project
    merge-wheels  merge variant wheels (one per torch minor and build) into one
    patch-torch   build a library replacing the installed torch's Functions by edited specs
    run-patched   run a command with such a library preloaded
    report     read a build's JSON report; a CI gate on its hit rate and compiles
    bench      benchmark a project's builds: cold, no-op, edits, a second checkout's cache hits

`python -m autograd_scons COMMAND --help` says more; docs/cli.md has the
details.  Each command imports what it runs when it runs.
"""

import argparse
import sys

from autograd_scons.base.errors import SpecError, os_error_line
from autograd_scons.codegen import cli
from autograd_scons.torch_patch import commands as patch_commands
from autograd_scons.ship import merge, new
from autograd_scons.tool import weaken
from autograd_scons.bench import command as bench
from autograd_scons.build_report import gate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograd_scons",
                                     description="Autograd Functions for PyTorch-style yaml specs, "
                                                 "built incrementally by SCons.")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.add_commands(sub)
    weaken.add_command(sub)
    new.add_command(sub)
    merge.add_command(sub)
    patch_commands.add_commands(sub)
    gate.add_command(sub)
    bench.add_command(sub)
    args, extra = parser.parse_known_args(argv)
    if extra:   # bench passes the words it does not know to the builds (VAR=value, -j4, --debug=time)
        if not hasattr(args, "arguments"):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.arguments = list(args.arguments) + extra
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Run a parsed command; its errors as one line and an exit code."""
    try:
        return args.run(args)
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {os_error_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
