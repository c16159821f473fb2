"""`python -m autograd_scons merge-wheels -o OUTDIR A.whl B.whl ...`: one
wheel carrying the library of each variant wheel (one per torch minor and
build, each built by the backend under that torch), picked at import by
the package's loader (templates/project/extname/__init__.py).

    demo/__init__.py                      once: every input's must be the same bytes
    demo/_C/torch2.13_cpu.so              demo/_C.so of the 2.13 CPU wheel
    demo/_C/torch2.14_cu130.so            demo/_C.so of the 2.14 CUDA 13.0 wheel
    demo-0.1.0.dist-info/METADATA         Requires-Dist: torch>=2.13,<2.15 (exactly the carried minors)
    demo-0.1.0.dist-info/WHEEL            Tag: cp311-cp311-manylinux_2_34_x86_64 (auditwheel: platform_tag.py)
    demo-0.1.0.dist-info/autograd_scons.json   the variants
    demo-0.1.0.dist-info/RECORD

The same inputs give the same bytes (wheel_files.write_wheel: sorted
entries, fixed timestamps); the wheel is written whole or not at all.
Inputs that disagree (their Python files, name, version, Python tag, the
rest of their metadata) or repeat a variant are one line, before anything
is written.
"""

import json
import os
import posixpath
import re
import sys
import tempfile
import zipfile

from autograd_scons.base.errors import Error
from autograd_scons.ship import platform_tag, torch_span, variant, wheel_files


class MergeError(Error, ValueError):
    """One line (`str()`)."""


_TORCH_REQ = re.compile(r"Requires-Dist:\s*torch\s*(?:[<>=!~(;]|$).*")


def _wheel_name(path):
    """(distribution, version, python tag, abi tag, platform tag) of a wheel's file name."""
    parts = os.path.basename(path)[:-len(".whl")].split("-") if path.endswith(".whl") else []
    if len(parts) != 5:
        raise MergeError(f"{path}: not a wheel file name (NAME-VERSION-PY-ABI-PLATFORM.whl)")
    return tuple(parts)


def read_variant(path):
    """{"path", "name": the file name's five parts, "files": {member: bytes}, "info": the dist-info folder,
    "variant": its autograd_scons.json}."""
    parts = _wheel_name(path)
    try:
        with zipfile.ZipFile(path) as z:
            files = {n: z.read(n) for n in z.namelist() if not n.endswith("/")}
    except (OSError, zipfile.BadZipFile) as e:
        raise MergeError(f"{path}: cannot read the wheel: {e}") from None
    info = f"{parts[0]}-{parts[1]}.dist-info"
    record = files.get(f"{info}/{variant.VARIANT_FILE}")
    if record is None:
        raise MergeError(f"{path}: no {info}/{variant.VARIANT_FILE}: not a variant wheel built by "
                         "autograd_scons.build_meta (a merged wheel, or one built before merge-wheels existed: "
                         "build it again)")
    try:
        data = json.loads(record)
    except ValueError as e:
        raise MergeError(f"{path}: {info}/{variant.VARIANT_FILE}: not JSON ({e})") from None
    unsafe = sorted(n for n in files if not _relative(n))
    if unsafe:  # it would be written where it says when the merged wheel is installed
        raise MergeError(f"{path}: member {unsafe[0]!r} is not a normalized relative path")
    if not isinstance(data, dict) or not variant.NAME.fullmatch(str(data.get("variant"))):
        raise MergeError(f"{path}: {info}/{variant.VARIANT_FILE} names no variant such as torch2.13_cpu")
    if files.get(data.get("library")) is None or not data["library"].endswith(".so"):
        raise MergeError(f"{path}: {info}/{variant.VARIANT_FILE} names no library in the wheel: not a variant "
                         "wheel (merging merged wheels is not supported: merge their variant wheels)")
    return {"path": path, "name": parts, "files": files, "info": info, "variant": data}


def _relative(member):
    return (not member.startswith("/") and "\\" not in member and posixpath.normpath(member) == member
            and ".." not in member.split("/"))


def _same(wheels, what, key):
    values = {}
    for w in wheels:
        values.setdefault(key(w), w["path"])
    if len(values) > 1:
        (a, pa), (b, pb) = list(values.items())[:2]
        raise MergeError(f"{what} differs: {a} ({pa}) and {b} ({pb}): merge variant wheels of one project "
                         "and version")


def _without_torch(metadata):
    return [line for line in metadata.splitlines() if not _TORCH_REQ.fullmatch(line)]


def merged_contents(wheels):
    """({member: bytes} of the package, {dist-info name: text}, the
    Python+ABI tag) of the merged wheel; MergeError when the inputs disagree."""
    if not wheels:
        raise MergeError("no wheel to merge")
    _same(wheels, "the distribution", lambda w: f"{w['name'][0]}-{w['name'][1]}")
    _same(wheels, "the Python tag", lambda w: f"{w['name'][2]}-{w['name'][3]}")
    seen = {}
    for w in wheels:
        name = w["variant"]["variant"]
        if name in seen:
            raise MergeError(f"{w['path']} and {seen[name]} are both the variant {name}: one wheel per torch "
                             "minor and build")
        seen[name] = w["path"]
    info = wheels[0]["info"]
    shared = {}   # the package's Python files, and the dist-info files the variants share
    for w in wheels:
        own = {w["variant"]["library"], f"{info}/RECORD", f"{info}/WHEEL", f"{info}/METADATA",
               f"{info}/{variant.VARIANT_FILE}"}
        for member, data in w["files"].items():
            if member in own:
                continue
            if member in shared and shared[member][0] != data:
                raise MergeError(f"{member} differs between {shared[member][1]} and {w['path']}: the variants "
                                 "must be built from the same sources")
            shared.setdefault(member, (data, w["path"]))
    for w in wheels:  # a file one variant lacks is a difference too
        own_names = set(w["files"]) - {w["variant"]["library"]}
        missing = sorted(m for m in shared if m not in own_names)
        if missing:
            raise MergeError(f"{missing[0]} is in {shared[missing[0]][1]} but not in {w['path']}: the variants "
                             "must be built from the same sources")
    metadata = [w["files"][f"{info}/METADATA"].decode() for w in wheels]
    for w, text in zip(wheels[1:], metadata[1:]):
        a, b = _without_torch(metadata[0]), _without_torch(text)
        if a != b:
            line = next((x, y) for x, y in zip(a + [""] * len(b), b + [""] * len(a)) if x != y)
            raise MergeError(f"METADATA differs between {wheels[0]['path']} ({line[0]!r}) and {w['path']} "
                             f"({line[1]!r}): merge variant wheels of one project and version")
    try:
        span = torch_span.requires_for([torch_span.minor(w["variant"]["torch"]) for w in wheels])
    except torch_span.BadSpan as e:
        raise MergeError(str(e)) from None
    files = {m: d for m, (d, _) in shared.items() if not m.startswith(f"{info}/")}
    variants = {}
    for w in sorted(wheels, key=lambda w: w["variant"]["variant"]):
        v = w["variant"]
        stem = posixpath.splitext(v["library"])[0]          # demo/_C
        member = f"{stem}/{v['variant']}.so"                # demo/_C/torch2.13_cpu.so
        files[member] = w["files"][v["library"]]
        variants[v["variant"]] = {"library": member, "torch": v["torch"], "torch_cuda": v.get("torch_cuda"),
                                  "cuda_arches": v.get("cuda_arches") or []}
    lines = metadata[0].splitlines()
    text = "\n".join(f"Requires-Dist: torch{span}" if _TORCH_REQ.fullmatch(line) else line for line in lines)
    dist_info = {m[len(info) + 1:]: d.decode() for m, (d, _) in shared.items() if m.startswith(f"{info}/")}
    dist_info["METADATA"] = text + ("\n" if metadata[0].endswith("\n") else "")
    dist_info[variant.VARIANT_FILE] = json.dumps({"variants": variants}, sort_keys=True, indent=1) + "\n"
    return files, dist_info, f"{wheels[0]['name'][2]}-{wheels[0]['name'][3]}"


def _platform(wheels):
    plats = {w["name"][4] for w in wheels}
    arch = {re.sub(r"^(manylinux_\d+_\d+|linux)_", "", p) for p in plats}
    if len(arch) != 1:
        raise MergeError(f"the wheels are for different platforms: {', '.join(sorted(plats))}")
    return f"linux_{arch.pop()}"


def merge(paths, outdir, plat="auto"):
    """Write the merged wheel of the variant wheels `paths` into `outdir`;
    returns its path.  `plat`: "auto" (the manylinux tag auditwheel
    confirms), "linux" (keep linux_<arch>), or a tag to check against it."""
    wheels = [read_variant(p) for p in paths]
    files, dist_info, py = merged_contents(wheels)
    dist = f"{wheels[0]['name'][0]}-{wheels[0]['name'][1]}"
    linux = _platform(wheels)
    try:  # (every input checked first: a refused merge leaves no folder behind)
        os.makedirs(outdir, exist_ok=True)   # as `pip wheel -w` and `python -m build -o` do
    except OSError as e:
        raise MergeError(f"{outdir}: cannot make the output folder: {e.strerror}") from None
    tag = f"{py}-{linux}"
    if plat != "linux":
        with tempfile.TemporaryDirectory(prefix=".merge-", dir=outdir) as tmp:
            probe = os.path.join(tmp, f"{dist}-{tag}.whl")
            wheel_files.write_wheel(probe, files, dict(dist_info, WHEEL=wheel_files.wheel_text(tag)))
            try:
                platform_tag.check_elf({m: d for m, d in files.items() if m.endswith(".so")})
                found = platform_tag.manylinux_tag(platform_tag.audit(probe))
            except platform_tag.TagError as e:
                raise MergeError(str(e)) from None
        if plat not in ("auto", found):
            raise MergeError(f"--plat {plat}: auditwheel says the libraries need {found}")
        tag = f"{py}-{found}"
    path = os.path.join(outdir, f"{dist}-{tag}.whl")
    wheel_files.write_wheel(path, files, dict(dist_info, WHEEL=wheel_files.wheel_text(tag)))  # atomic
    return path


def add_command(sub) -> None:
    """`merge-wheels`, on `sub` (an argparse subparsers action)."""
    p = sub.add_parser("merge-wheels", help="merge variant wheels (one per torch minor and build) into one")
    p.add_argument("-o", "--outdir", required=True, help="folder the merged wheel is written into (made if missing)")
    p.add_argument("--plat", default="auto",
                   help="auto (default: the manylinux tag auditwheel confirms), linux (keep linux_<arch>), "
                        "or the manylinux tag expected")
    p.add_argument("wheels", nargs="+", metavar="WHEEL")
    p.set_defaults(run=_cmd_merge)


def _cmd_merge(args) -> int:
    try:
        print(merge(args.wheels, args.outdir, args.plat))
    except MergeError as e:
        print(f"autograd_scons merge-wheels: error: {e}", file=sys.stderr)
        return 1
    return 0
