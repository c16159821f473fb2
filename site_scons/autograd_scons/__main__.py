"""`python -m autograd_scons COMMAND`: the tool's command line.

    generate   write the C++ autograd Functions of a pair of spec files
    infos      print the differentiability infos as JSON
    signatures print the C++ declaration of every kernel a native_functions.yaml names
    weaken     copy a bucket's object with the edit TUs' symbols made weak
    new        write a new extension project
    merge-wheels  merge variant wheels (one per torch minor and build) into one
    patch-torch   build a library replacing the installed torch's Functions by edited specs
    run-patched   run a command with such a library preloaded

`python -m autograd_scons COMMAND --help` says more; docs/cli.md has the
details.  Each command imports what it runs when it runs.
"""

import argparse
import sys

from autograd_scons.codegen import cli
from autograd_scons.torch_patch import commands as patch_commands
from autograd_scons.ship import merge, new


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograd_scons",
                                     description="Autograd Functions for PyTorch-style yaml specs, "
                                                 "built incrementally by SCons.")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.add_commands(sub)
    new.add_command(sub)
    merge.add_command(sub)
    patch_commands.add_commands(sub)
    return cli.run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
