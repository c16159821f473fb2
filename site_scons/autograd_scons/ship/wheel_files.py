"""Reproducible wheel and sdist archives (PEP 427, PEP 625): entries in a
fixed order with fixed timestamps, modes and owners, so that the same
files give the same archive bytes wherever and whenever they are built.
The timestamp is $SOURCE_DATE_EPOCH when set (the reproducible-builds
convention), else 1980-01-01, the oldest a zip file can hold."""

import base64
import gzip
import hashlib
import io
import os
import posixpath
import re
import tarfile
import time
import zipfile

from autograd_scons.base.errors import Error

_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)

# PEP 508's distribution name, with both cases spelled out: under
# re.IGNORECASE, [A-Z] would also take four non-ASCII letters (the Kelvin
# sign among them).
_NAME = re.compile(r"[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")
# PEP 440's canonical form (what packaging's str(Version(...)) gives): no
# separator a file name could misread, no leading zeros, lower case.
_NUMBER = r"(?:0|[1-9][0-9]*)"
_CANONICAL_VERSION = re.compile(
    rf"(?:[1-9][0-9]*!)?{_NUMBER}(?:\.{_NUMBER})*(?:(?:a|b|rc){_NUMBER})?(?:\.post{_NUMBER})?(?:\.dev{_NUMBER})?"
    rf"(?:\+(?:{_NUMBER}|[a-z0-9]*[a-z][a-z0-9]*)(?:\.(?:{_NUMBER}|[a-z0-9]*[a-z][a-z0-9]*))*)?")


class UnsafePath(Error, ValueError):
    """An archive member or a project file that would reach outside the
    archive's root or the project: one line (`str()`)."""


def valid_name(name):
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def canonical_version(version):
    """PEP 440's canonical spelling of `version`, or None when it is not a
    version.  With `packaging`, any PEP 440 spelling is taken and
    normalized ("1.0-beta1" -> "1.0b1"); without it, only the canonical
    form itself (a check that needs no third-party module)."""
    if not isinstance(version, str):
        return None
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:
        canonical = version
    else:
        try:
            canonical = str(Version(version))
        except InvalidVersion:
            return None
    return canonical if _CANONICAL_VERSION.fullmatch(canonical) else None


def normalized(name):
    """A distribution name as wheel and sdist file names spell it (the
    binary distribution format's escaping: runs of -_. become _)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _epoch():
    text = os.environ.get("SOURCE_DATE_EPOCH", "")
    return int(text) if text.isdigit() else None


def _zip_time():
    epoch = _epoch()
    return max(time.gmtime(epoch)[:6], _ZIP_EPOCH) if epoch is not None else _ZIP_EPOCH


def wheel_text(tag):
    return ("Wheel-Version: 1.0\nGenerator: autograd_scons.build_meta\nRoot-Is-Purelib: false\n"
            f"Tag: {tag}\n")


def write_wheel(path, files, dist_info):
    """`files`: {path in the wheel: bytes}; `dist_info`: {name: text} for the
    .dist-info folder (RECORD is added).  Written atomically."""
    entries = sorted(files.items())
    info_dir = _dist_info_dir(path)
    entries += [(f"{info_dir}/{name}", text.encode()) for name, text in sorted(dist_info.items())]
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in entries]
    entries.append((f"{info_dir}/RECORD", ("\n".join(record + [f"{info_dir}/RECORD,,"]) + "\n").encode()))
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with zipfile.ZipFile(tmp, "w") as z:
            for name, data in entries:
                info = zipfile.ZipInfo(name, date_time=_zip_time())
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
                z.writestr(info, data, compresslevel=6)
        os.replace(tmp, path)
    except BaseException:  # a full disk or Ctrl-C: no partial wheel left beside the folder's others
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _dist_info_dir(wheel_path):
    name, version = os.path.basename(wheel_path).split("-")[:2]
    return f"{name}-{version}.dist-info"


def _digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _member(root_name, rel):
    """`root_name/rel`, refused unless both are relative and normalized and
    neither climbs out (`..`): an extractor writes members where they say."""
    for part in (root_name, rel):
        if (not part or part.startswith("/") or "\\" in part or posixpath.normpath(part) != part
                or ".." in part.split("/")):
            raise UnsafePath(f"sdist member {root_name + '/' + rel!r}: not a normalized relative path")
    if "/" in root_name:
        raise UnsafePath(f"sdist root {root_name!r}: not one folder name")
    return f"{root_name}/{rel}"


def write_sdist(path, root_name, files, pkg_info):
    """`files`: [(path inside the project, file on disk)]; PKG-INFO added.
    Every member is `root_name/<relative path>`: any other is UnsafePath,
    raised before anything is written."""
    epoch = _epoch() or 0
    checked = [(_member(root_name, rel), disk) for rel, disk in files]
    members = [(_member(root_name, "PKG-INFO"), pkg_info.encode(), 0o644)]
    for name, disk in checked:
        with open(disk, "rb") as f:
            members.append((name, f.read(), 0o755 if os.access(disk, os.X_OK) else 0o644))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), epoch, mode
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=epoch, filename="") as gz:
        gz.write(buffer.getvalue())
    os.replace(tmp, path)


# What an sdist leaves out: build outputs and tool state, never a source.
_NOT_SOURCES = re.compile(r"(^|/)(build|dist|__pycache__|[^/]*\.egg-info|\.[^/]+)(/|$)|"
                          r"\.(so|o|os|pyc|gch|dblite)$|(^|/)\.sconsign")


def _inside(path, root):
    return os.path.commonpath([path, root]) == root


def check_link(path, rel, root, archive="an sdist"):
    """UnsafePath naming `rel` when `path` is a symlink out of `root` (a
    real path: the project) or to a folder: packing it would carry a file
    from elsewhere into the archive, or silently leave a folder out.  A
    link to a file inside the project passes: it is packed as that file's
    content."""
    if not os.path.islink(path):
        return
    target = os.path.realpath(path)
    if not _inside(target, root):
        raise UnsafePath(f"{rel!r} is a symlink to {target!r}, outside the project: {archive} packs the "
                         "project's own files only (copy the file in, or remove the link)")
    if os.path.isdir(target):
        raise UnsafePath(f"{rel!r} is a symlink to a folder: {archive} does not follow it (make it a folder, "
                         "or remove the link)")


def project_files(project):
    """[(path in the project, file on disk)] that an sdist holds: every
    file but build outputs, hidden files and folders (.git, .sconsign...);
    a symlink only as check_link lets it."""
    root = os.path.realpath(project)
    found = []
    for folder, subdirs, names in os.walk(project):
        rel_dir = os.path.relpath(folder, project).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        subdirs[:] = sorted(d for d in subdirs if not _NOT_SOURCES.search(rel_dir + d))
        names = [n for n in sorted(names) if not _NOT_SOURCES.search(rel_dir + n)]
        for name in subdirs + names:  # (os.walk lists a link to a folder among the folders)
            check_link(os.path.join(folder, name), rel_dir + name, root)
        for name in names:
            if os.path.isfile(os.path.join(folder, name)):
                found.append((rel_dir + name, os.path.join(folder, name)))
    return found


# The module the `.pth` imports: constant source, whatever the project.  A
# project's path never becomes Python source text (pasted into a string, a
# path holding """ would run code at every interpreter start, and one
# holding a backslash could stop every start with a SyntaxError): it is
# data, in the JSON file beside the module.
_HOOK = '''"""An editable install made by autograd_scons.build_meta, imported by
the .pth beside it at interpreter start.  What it installs (the package,
the project's folder, the build folder and SCons's arguments) is the JSON
file of the same name beside this module."""
try:
    from autograd_scons.ship.editable import install_file
except ImportError:  # autograd-functions-scons uninstalled (or older): the package is not importable
    pass
else:
    install_file(__file__)
'''


def editable_files(project, package, build, args):
    """{path in the wheel: bytes} of an editable wheel: the `.pth`, the hook
    module and its JSON config; the build has just run, so its stamp is
    written now and the first import is a no-op."""
    import json

    from autograd_scons.ship.project import write_editable_stamp
    if not package.isidentifier():  # it is a module name in the .pth's import line
        raise ValueError(f"{package!r} is not a Python identifier")
    write_editable_stamp(os.path.join(project, build), args)
    config = {"package": package, "project": project, "build": build, "args": list(args)}
    module = f"_{package}_editable"
    # (json's default ASCII escapes give back any path exactly, one with
    # undecodable bytes, which os.fsdecode spells as lone surrogates, too)
    return {f"{module}.pth": f"import {module}\n".encode(),
            f"{module}.py": _HOOK.encode(),
            f"{module}.json": (json.dumps(config, sort_keys=True, indent=1) + "\n").encode()}
