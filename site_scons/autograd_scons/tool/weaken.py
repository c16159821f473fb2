"""Override exactly an edited unit's old definitions in a bucket's object.

While an edited unit is shadowed (codegen/engine/buckets.py), its old text stays in
its bucket's object and its new text is in an edit TU's.  Linking both would
define its functions twice.  Instead of telling the linker to take the first
of *any* two definitions (`--allow-multiple-definition`, which also hides a
duplicate in the user's own code), the link takes a derived copy of the
bucket's object in which exactly the symbols an edit TU also defines are
weak (`objcopy --weaken-symbols`): the edit TU's strong definitions win, and
every other duplicate still fails the link as in a clean build.  No
recompile; milliseconds per bucket.  ELF objects only (GNU binutils or
LLVM's nm/objcopy); elsewhere the caller turns the override off and the
bucket is rewritten instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Iterable, Sequence

from autograd_scons.base.errors import Error

# `nm -P` types of strong definitions of global symbols (code, data, bss,
# read-only, small data); W/V (weak) and U (undefined) are not.
_STRONG = frozenset("TDBRGS")
_ELF_MAGIC = b"\x7fELF"


class WeakenError(Error):
    """A bucket object that cannot be overridden: one line saying why."""


def is_elf(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == _ELF_MAGIC


def strong_symbols(obj: str, nm: str = "nm") -> set[str]:
    """The global symbols `obj` defines strongly."""
    proc = subprocess.run([nm, "--defined-only", "-g", "-P", obj], capture_output=True, text=True)
    if proc.returncode != 0:
        raise WeakenError(f"{nm} {obj}: {proc.stderr.strip() or 'failed'}")
    found = set()
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] in _STRONG:
            found.add(parts[0])
    return found


def overridden(bucket: str, edits: Iterable[str], nm: str = "nm") -> list[str]:
    """The symbols both `bucket` and one of the `edits` define strongly:
    the shadowed units' old definitions (generated units never share a
    symbol otherwise)."""
    mine: set[str] = set()
    for e in edits:
        mine |= strong_symbols(e, nm)
    return sorted(strong_symbols(bucket, nm) & mine)


def weaken(bucket: str, edits: Sequence[str], target: str, nm: str = "nm",
           objcopy: str = "objcopy") -> list[str]:
    """Write `target`: `bucket` with the symbols `edits` also define made
    weak.  Returns them.  Written under a temporary name, then renamed, so
    that a failure never leaves a half-written object."""
    for path in [bucket, *edits]:
        if not is_elf(path):
            raise WeakenError(f"{path}: not an ELF object: the override needs ELF objects; "
                              "turn it off (AUTOGRAD_OVERRIDE=False) to rewrite the bucket instead")
    names = overridden(bucket, edits, nm)
    tmp = f"{target}.{os.getpid()}.tmp"
    listing = tmp + ".symbols"
    try:
        if names:
            with open(listing, "w") as f:
                f.write("".join(n + "\n" for n in names))
            proc = subprocess.run([objcopy, f"--weaken-symbols={listing}", bucket, tmp],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise WeakenError(f"{objcopy} {bucket}: {proc.stderr.strip() or 'failed'}")
        else:  # nothing to weaken (objcopy fails, silently, on an empty list)
            shutil.copyfile(bucket, tmp)
        os.replace(tmp, target)
    finally:
        for p in (tmp, listing):
            if os.path.exists(p):
                os.unlink(p)
    return names


def add_command(sub) -> None:
    """`python -m autograd_scons weaken`, on `sub` (an argparse subparsers action)."""
    weak = sub.add_parser("weaken", help="copy a bucket's object with the symbols the edit TUs' "
                                         "objects define made weak (ELF; nm and objcopy)")
    weak.add_argument("bucket", metavar="BUCKET_OBJECT")
    weak.add_argument("edits", nargs="+", metavar="EDIT_TU_OBJECT")
    weak.add_argument("-o", "--output", required=True, metavar="OBJECT")
    weak.add_argument("--nm", default="nm")
    weak.add_argument("--objcopy", default="objcopy")
    weak.set_defaults(run=_cmd_weaken)


def _cmd_weaken(args) -> int:
    from autograd_scons.tool.weaken import WeakenError, weaken  # (on use: see the module's docstring)
    try:
        names = weaken(args.bucket, args.edits, args.output, nm=args.nm, objcopy=args.objcopy)
    except WeakenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{args.output}: {len(names)} symbols of {args.bucket} made weak")
    return 0
