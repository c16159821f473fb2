"""PEP 517 / PEP 660 build backend for extension projects built by this
tool (`build-backend = "autograd_scons.build_meta"`; docs/shipping.md).

Each hook runs the project's own `SConstruct` (the same build as `scons`:
extension.py) in a subprocess, in the build folder `build/<python tag>`
inside the project, so that wheel, editable install and `scons` reuse each
other's objects, and paths in the library stay relative (a wheel built from
two copies of a project, or from its sdist, has the same library bytes).
`--config-settings` (`-C`) pass SCons variables through
(`-C TORCH_CUDA_ARCH_LIST=9.0 -C PCH=0`), and `-C -j=4` the job count.

The wheel holds the package's Python files and its library, nothing else,
requires the torch minor it was built against (`torch==X.Y.*`: the library
links torch's C++ API, whose ABI changes between minors) and is tagged for
the interpreter (`cp311-cp311-linux_x86_64`): the library links
libtorch_python and Python's C API.  With `PYTHON=0` the library uses
neither, so the tag is `py3-none-<platform>`.  A stable project
(`[tool.autograd-scons] stable = "2.10"`, ship/stable_project.py) requires
`torch>=2.10` and is tagged `cp39-abi3-<platform>`.

Every hook writes only inside the folder pip gives it: pyproject.toml's
name and version are checked (PEP 508, PEP 440) before anything is
written, and the sdist packs the project's own files only (docs/shipping.md,
"What the backend takes from the project").
"""

import os
import re
import sys
import sysconfig

from autograd_scons.buildenv.runner import BuildError  # one line (`str()`): the hooks print no traceback
from autograd_scons.ship import metadata, stable_project, variant, wheel_files
from autograd_scons.ship.project import ProjectBuild, build_project

# The PEP 517 and PEP 660 hooks; everything else here is the backend's own.
__all__ = ["build_editable", "build_sdist", "build_wheel", "get_requires_for_build_editable",
           "get_requires_for_build_sdist", "get_requires_for_build_wheel", "prepare_metadata_for_build_editable",
           "prepare_metadata_for_build_wheel"]

BUILD_ROOT = "build"


def _load_toml(path):
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


def _project_config(project="."):
    """pyproject.toml's table, checked for what the backend needs before
    any hook writes anything: `name` and `version` make the file and folder
    names the hooks write (and the sdist's members), so a name that is not
    PEP 508's or a version that is not PEP 440's is refused, never escaped.
    The version is replaced by its canonical spelling, which the file
    names and the metadata then share."""
    path = os.path.join(project, "pyproject.toml")
    data = _load_toml(path)
    meta = data.get("project") or {}
    for key in ("name", "version"):
        if not isinstance(meta.get(key), str):
            raise BuildError(f"{path}: [project] needs a static `{key}` string")
    if not wheel_files.valid_name(meta["name"]):
        raise BuildError(f"{path}: [project] name {meta['name']!r} is not a distribution name (PEP 508: ASCII "
                         "letters and digits, with . _ - between them)")
    version = wheel_files.canonical_version(meta["version"])
    if version is None:
        import importlib.util
        how = "" if importlib.util.find_spec("packaging") else \
            " (without the `packaging` module here, only PEP 440's canonical spelling, such as 1.0.0b1)"
        raise BuildError(f"{path}: [project] version {meta['version']!r} is not a PEP 440 version{how}")
    meta["version"] = version
    # every other field written, or refused (ship/metadata.py): never dropped
    metadata.check(meta, project, path)
    return data


def _build_pin(data):
    """The torch specifier of build-system.requires (`==X.Y.*`, `>=2.13,<2.15`), or None."""
    for req in (data.get("build-system") or {}).get("requires") or []:
        m = re.fullmatch(r"\s*torch\s*(\S.*)?", req)
        if m:
            return (m.group(1) or "").replace(" ", "")
    return None


def _torch_minor(version):
    return ".".join(version.split("+")[0].split(".")[:2])


def _check_torch(data, cache_dir):
    """The build environment's torch version, refused in one line when
    absent or outside the span build-system.requires states (ship/torch_span.py)."""
    import importlib.util
    from autograd_scons.buildenv import torch_flags
    wanted = _build_pin(data)
    if importlib.util.find_spec("torch") is None:
        how = (f"`pip install 'torch{wanted}'` and build with --no-build-isolation"
               if wanted is not None else "add torch==X.Y.* to build-system.requires in pyproject.toml (isolated builds), "
               "or install torch and build with --no-build-isolation")
        raise BuildError(f"no torch in the build environment ({sys.executable}): {how}")
    version = torch_flags.torch_facts(os.path.join(cache_dir, ".torch.json"))["version"]
    from autograd_scons.ship import torch_span  # a span (>=2.13,<2.15) or one minor (==2.13.*)
    try:
        inside = not wanted or torch_span.contains(wanted, version)
    except torch_span.BadSpan as e:
        raise BuildError(f"pyproject.toml: build-system.requires: {e}") from None
    if not inside and torch_span.pinned_minor(wanted) is None:
        raise BuildError(f"torch {version} in the build environment ({sys.executable}) is outside the "
                         f"build-system.requires span torch{wanted}: install a torch in that span there, or widen "
                         "the span in pyproject.toml")
    if not inside:
        raise BuildError(f"torch {version} in the build environment ({sys.executable}) is not the "
                         f"build-system.requires pin torch{wanted}: install torch{wanted} there, or change "
                         f"the pin in pyproject.toml to torch=={_torch_minor(version)}.*")
    return version


def _requires(data, torch_version):
    """Requires-Dist: [project] dependencies (any torch among them replaced
    by) and the pin to the torch the library was built against; for the
    stable target, that torch or any later one (ship/stable_project.py)."""
    deps = [d for d in data["project"].get("dependencies") or [] if not re.match(r"\s*torch\b(?![-_.\w])", d)]
    target = _stable(data)
    return deps + [stable_project.torch_requirement(target) if target else f"torch=={_torch_minor(torch_version)}.*"]


def _stable(data):
    """The project's stable target (pyproject.toml), or None; one line when bad."""
    try:
        return stable_project.stable_of(data)
    except stable_project.StableConfigError as e:
        raise BuildError(str(e)) from None


def _python_tag():
    """cpXY (cpXYt for a free-threaded build)."""
    threaded = "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    return f"cp{sys.version_info[0]}{sys.version_info[1]}{threaded}"


def _platform_tag():
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def _wheel_tag(with_python, stable=False):
    if stable:  # no Python C API in the library (ship/stable_project.py)
        return f"{stable_project.ABI3_TAG}-{_platform_tag()}"
    if with_python:
        return f"{_python_tag()}-{_python_tag()}-{_platform_tag()}"
    return f"py3-none-{_platform_tag()}"


def _build_dir():
    """The build folder unless `-C BUILD=...` names another."""
    return os.path.join(BUILD_ROOT, f"{_python_tag()}-{_platform_tag()}")


def _project_build(project, config_settings):
    """The request of this build: pip's `-C` settings, checked once."""
    return ProjectBuild.from_settings(project, config_settings, _build_dir())


def _build_library(project=".", config_settings=None):
    """Check torch, build, and return (pyproject data, wheel.json info, the ProjectBuild)."""
    import json
    from autograd_scons.extension import WHEEL_JSON
    data = _project_config(project)
    request = _project_build(project, config_settings)
    build = request.build
    version = _check_torch(data, request.folder)
    from autograd_scons.base.lock import BuildLock
    folder = os.path.abspath(request.folder)  # named in a failure: absolute
    with BuildLock(folder, label="autograd_scons") as lock:  # the lock an editable import's rebuild takes
        build_project(request, os.path.join(folder, "build.log"), lock)
    with open(os.path.join(project, build, WHEEL_JSON)) as f:
        info = json.load(f)
    if _torch_minor(info["torch"]) != _torch_minor(version):  # never a silently mismatched wheel
        raise BuildError(f"the library in {build} was built against torch {info['torch']}, not {version}")
    if info.get("cuda_skipped"):
        print(f"autograd_scons: wheel without CUDA kernels ({info['cuda_skipped']}): "
              f"{', '.join(info['cuda_sources'])} not built", file=sys.stderr)
    elif info.get("cuda"):
        print(f"autograd_scons: CUDA kernels for {';'.join(info['cuda'])}", file=sys.stderr)
    return data, info, request


def _entry_points(data):
    text = metadata.entry_points_text(data["project"])
    return {"entry_points.txt": text} if text else {}


def _dist(data):
    """NAME-VERSION of the wheel, the dist-info folder and the sdist: the
    name normalized, the version canonical (_project_config)."""
    meta = data["project"]
    return f"{wheel_files.normalized(meta['name'])}-{meta['version']}"


def _package_files(project, package):
    """{path in the wheel: bytes} of the package's Python files; a symlink
    only as the sdist takes it (wheel_files.check_link)."""
    files = {}
    root = os.path.join(project, package)
    if not os.path.isfile(os.path.join(root, "__init__.py")):
        raise BuildError(f"{root}/__init__.py: no such file (the package the SConstruct's extension.Package names)")
    real = os.path.realpath(project)
    for folder, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        names = sorted(n for n in names if n.endswith(".py"))
        for name in subdirs + names:
            path = os.path.join(folder, name)
            try:
                wheel_files.check_link(path, os.path.relpath(path, project).replace(os.sep, "/"), real, "a wheel")
            except wheel_files.UnsafePath as e:
                raise BuildError(str(e)) from None
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, project).replace(os.sep, "/")] = f.read()
    return files


def _wheel(wheel_directory, data, info, files):
    version = info["torch"]
    tag = _wheel_tag(info["python"], bool(info.get("stable")))
    name = f"{_dist(data)}-{tag}.whl"
    wheel_files.write_wheel(os.path.join(wheel_directory, name), files, {
        "METADATA": metadata.metadata_text(data["project"], _requires(data, version), "."),
        "WHEEL": wheel_files.wheel_text(tag), **_entry_points(data),
        # which torch the library is for, read by merge-wheels (ship/merge.py)
        **(variant.dist_info(info) if info["library"] in files else {})})
    return name


def _main_hook(fn):
    """A hook whose BuildError is one line on stderr and exit status 1."""
    def hook(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BuildError as e:
            print(f"autograd_scons: error: {e}" if not str(e).startswith("autograd_scons") else str(e),
                  file=sys.stderr)
            raise SystemExit(1) from None
    hook.__name__, hook.__doc__ = fn.__name__, fn.__doc__
    return hook


@_main_hook
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    data, info, request = _build_library(".", config_settings)
    files = _package_files(".", info["package"])
    for rel in [info["library"]] + info.get("modules", []):  # (a stable library's autograd module beside it)
        with open(os.path.join(request.build, rel), "rb") as f:
            files[rel] = f.read()
    return _wheel(wheel_directory, data, info, files)


@_main_hook
def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    data, info, request = _build_library(".", config_settings)
    return _wheel(wheel_directory, data, info, wheel_files.editable_files(
        os.path.abspath("."), info["package"], request.build, request.args))


def _prepare_metadata(metadata_directory, config_settings=None):
    data = _project_config(".")
    version = _check_torch(data, _project_build(".", config_settings).build)
    folder = f"{_dist(data)}.dist-info"
    os.makedirs(os.path.join(metadata_directory, folder), exist_ok=True)
    with open(os.path.join(metadata_directory, folder, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata.metadata_text(data["project"], _requires(data, version), "."))
    for name, text in _entry_points(data).items():
        with open(os.path.join(metadata_directory, folder, name), "w", encoding="utf-8") as f:
            f.write(text)
    return folder


prepare_metadata_for_build_wheel = _main_hook(_prepare_metadata)
prepare_metadata_for_build_editable = _main_hook(_prepare_metadata)


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_editable = get_requires_for_build_sdist = get_requires_for_build_wheel


@_main_hook
def build_sdist(sdist_directory, config_settings=None):
    data = _project_config(".")
    root = _dist(data)
    name = f"{root}.tar.gz"
    pkg_info = metadata.metadata_text(data["project"], data["project"].get("dependencies") or [], ".")
    try:
        wheel_files.write_sdist(os.path.join(sdist_directory, name), root, wheel_files.project_files("."), pkg_info)
    except wheel_files.UnsafePath as e:
        raise BuildError(str(e)) from None
    return name
