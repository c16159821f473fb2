"""`python -m autograd_scons patch-torch`: build a library that replaces the
generated Functions of the installed torch by those of edited specs
(docs/patching-torch.md).

    result = patch_torch(folder, derivatives="derivatives.yaml")   # PatchError: one line
    result.library, result.patched, result.left_out, result.compiled

The build is SCons's, through the environment every build uses
(patch_sconstruct.py here, run by buildenv.runner in `folder`), and the
generator's incremental update in patch mode (codegen/engine/patch_selection.py chooses the
Functions and refuses what cannot be patched, before anything compiles).
What differs from load(): the classes are libtorch's own, so the specs
default to torch's own copies, the folder is bound to the torch it was
built for, and the library is linked with every symbol resolved
(`-z defs`), so that one using something libtorch keeps local fails at the
link, never at a program's start.  A refused or failed build leaves no
library in the folder: a patch that is there is the one the last
patch-torch built.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Optional

from autograd_scons.buildenv import runner, up_to_date, torch_flags
from autograd_scons.buildenv.prelude_folders import extensions_root
from autograd_scons.base.private_folder import ensure as ensure_private
from autograd_scons.buildenv.published import publish, read_own, write_if_changed
from autograd_scons.codegen.emit.options import LIBTORCH_NAMESPACE, TORCH_MANUAL_INCLUDES, PatchTarget
from autograd_scons.codegen.parse.libtorch_classes import read_classes
from autograd_scons.base.lock import BuildLock
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.codegen.tree import PATCH_SUMMARY
from autograd_scons.torch_patch import torch_library
from autograd_scons.torch_patch.build_lists import complex_ops
from autograd_scons.torch_patch.declarations import declared_only
from autograd_scons.torch_patch.libtorch_locals import unusable_names
from autograd_scons.torch_patch.identity import PatchError, TORCH_RECORD, torch_identity

LIBRARY = "libautograd_torch_patch.so"
PYTHON_LIBRARY = "libautograd_torch_patch_python.so"   # its own classes' Python types (loaded by the patch)
SPEC = "patch_spec.json"
STAMP = ".up_to_date.json"
LABEL = "patch-torch"
FACTS = ".libtorch_facts.json"   # read_facts of libtorch, for this torch (also read by the link step)
_SCONSTRUCT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "patch_sconstruct.py")
_UNDEFINED = re.compile(r"undefined reference to [`'](.+?)'")


@dataclass
class PatchResult:
    folder: str
    library: str
    patched: list = field(default_factory=list)      # the Functions the library defines
    edited: list = field(default_factory=list)       # those that differ from torch's own specs
    left_out: dict = field(default_factory=dict)     # reason -> [Functions] (--all)
    own: list = field(default_factory=list)          # Functions that are the patch's own classes
    kernels: list = field(default_factory=list)      # ATen ops whose Autograd kernel the patch replaces
    kernels_left_out: dict = field(default_factory=dict)   # reason -> [ops] keeping libtorch's (--kernels)
    compiled: list = field(default_factory=list)     # objects compiled by this run
    linked: bool = False
    up_to_date: bool = False


def default_folder(root: str) -> str:
    """`$AUTOGRAD_EXTENSIONS_DIR/torch_patch/<torch version>_<compiler>`."""
    version = torch_identity(root)["version"]
    cxx = re.sub(r"[^A-Za-z0-9+._-]", "_", os.path.basename((os.environ.get("CXX") or "g++").split()[0]))
    return os.path.join(extensions_root(), "torch_patch", f"torch{version}_{cxx}")


def patch_torch(folder: Optional[str] = None, *, native_functions=None, tags=None, derivatives=None,
                every: bool = False, kernels: bool = False, only=(), functions_manual=None,
                jobs: Optional[int] = None, verbose: bool = False) -> PatchResult:
    """Bring `folder`'s patch up to date with the specs (torch's own for any
    not given); `only`: with `every`, these Functions alone (PatchTarget.only).
    Raises PatchError (one line) for a refusal or a failure."""
    if only and not every:
        raise PatchError(f"{LABEL}: --only narrows --all (every Function that can be patched): give --all too")
    if not sys.platform.startswith("linux"):
        raise PatchError(f"{LABEL}: replacing libtorch's Functions needs ELF symbol interposition by a "
                         f"preloaded library (Linux); not available on {sys.platform}")
    root = torch_flags._torch_dir()
    torch_nf, torch_tags, torch_d = torch_flags.torch_specs()
    specs = [_given(p, what) if p is not None else default
             for p, what, default in ((native_functions, "--native-functions", torch_nf),
                                      (tags, "--tags", torch_tags), (derivatives, "--derivatives", torch_d))]
    manual = _given(functions_manual, "--functions-manual") if functions_manual is not None else None
    folder = os.path.abspath(folder or default_folder(root))
    ensure_private(folder, folder, LABEL)
    with BuildLock(folder, label=LABEL) as lock:
        identity = torch_identity(root)
        _check_same_torch(folder, identity)
        facts = _facts(folder, torch_library.library_path(root), identity)
        if facts.symbolic:
            raise PatchError(f"{LABEL}: {torch_library.library_path(root)} is linked with -Bsymbolic: it "
                             "binds its own Functions to itself, so no other library can replace them")
        functions_h = os.path.join(root, "include", "torch", "csrc", "autograd", "generated", "Functions.h")
        target = PatchTarget(functions_h, (torch_nf, torch_d, torch_tags),
                             () if manual else _unusable(root, facts), every, _bound_locally(functions_h, facts),
                             kernels, tuple(sorted(_complex_ops(torch_d))), tuple(sorted(set(only))))
        request = FunctionsRequest.of(specs[0], specs[2], tags=specs[1], namespace=LIBTORCH_NAMESPACE,
                                      includes=TORCH_MANUAL_INCLUDES, kernels=False, python=True,
                                      unity="auto", pch="auto", patch=target)
        spec = {"functions": request.to_json(), "functions_manual": manual}
        return _bring_up_to_date(folder, spec, identity, jobs or runner.default_jobs(), verbose, lock)


def _bound_locally(functions_h: str, facts: torch_library.LibtorchFacts) -> tuple:
    """The classes libtorch declares whose members a preloaded library
    cannot replace (not exported, or bound to libtorch itself)."""
    try:
        with open(functions_h, encoding="utf-8") as f:
            declared = read_classes(f.read())
    except OSError as e:
        raise PatchError(f"{LABEL}: {functions_h}: {e.strerror}: torch's headers are not installed") from None
    return tuple(sorted(set(declared) - facts.replaceable))


def _unusable(root: str, facts: torch_library.LibtorchFacts) -> tuple:
    """(name, why) of each name a formula could call that libtorch defines
    with no symbol the patch can reach (libtorch_locals.py): the names the
    installed headers declare without defining (FunctionsManual.h's
    helpers, the members of function.h's structs), and those of clones."""
    csrc = os.path.join(root, "include", "torch", "csrc", "autograd")
    declared: frozenset = frozenset()
    for header, namespace, members in (("FunctionsManual.h", "torch::autograd::generated::details", False),
                                       ("function.h", "torch::autograd", True)):
        try:
            with open(os.path.join(csrc, header), encoding="utf-8") as f:
                declared |= declared_only(f.read(), namespace, members)
        except OSError as e:
            raise PatchError(f"{LABEL}: {os.path.join(csrc, header)}: {e.strerror}: torch's headers are not "
                             "installed") from None
    found = unusable_names(facts.locals, facts.machine, declared, frozenset(facts.exported_helpers))
    return tuple(sorted(found.items()))


def _complex_ops(derivatives: str) -> frozenset:
    try:
        return complex_ops(derivatives)
    except (OSError, ValueError, SyntaxError) as e:
        raise PatchError(f"{LABEL}: cannot read which ops torch differentiates for complex outputs (its "
                         f"kernels refuse the others): {getattr(e, 'strerror', None) or e}") from None


def _given(path, what: str) -> str:
    full = os.path.abspath(os.fspath(path))
    if not os.path.isfile(full):
        raise PatchError(f"{LABEL}: {what} {os.fspath(path)}: no such file")
    return full


def _check_same_torch(folder: str, identity: dict) -> None:
    data = read_own(os.path.join(folder, TORCH_RECORD))
    if data is None:
        return
    try:
        built_for = json.loads(data)
    except ValueError:
        return  # damaged: rebuilt from scratch, for this torch
    if built_for != identity:
        raise PatchError(f"{LABEL}: {folder} holds a patch for torch {built_for.get('version')} at "
                         f"{built_for.get('root')}, not for this torch ({identity['version']} at "
                         f"{identity['root']}): give another folder (-o) or remove that one")


def _facts(folder: str, library: str, identity: dict) -> torch_library.LibtorchFacts:
    """read_facts of libtorch, kept in the folder for this torch."""
    path = os.path.join(folder, FACTS)
    kept = read_own(path)
    try:
        data = json.loads(kept) if kept else None
        if data and data.get("torch") == identity:
            return torch_library.LibtorchFacts.from_record(data["facts"])
    except (ValueError, TypeError, KeyError):
        pass
    try:
        facts = torch_library.read_facts(library)
    except (OSError, torch_library.ElfError) as e:
        raise PatchError(f"{LABEL}: {library}: {getattr(e, 'strerror', None) or e}: cannot tell which of "
                         "its Functions a patch can replace") from None
    up_to_date.write_json(path, {"torch": identity, "facts": facts.to_record()})
    return facts


def _bring_up_to_date(folder, spec, identity, jobs, verbose, lock) -> PatchResult:
    library, linked = os.path.join(folder, LIBRARY), os.path.join(folder, "obj", LIBRARY)
    stamp_path = os.path.join(folder, STAMP)
    key = json.loads(json.dumps({"spec": spec, "torch": identity, "jobs": jobs,
                                 "env": {k: os.environ.get(k, "") for k in ("CXX", "PATH", "AUTOGRAD_LAUNCHER")}}))
    write_if_changed(os.path.join(folder, SPEC), json.dumps(spec, indent=1, sort_keys=True))
    if up_to_date.up_to_date(stamp_path, key) and os.path.isfile(library):
        from autograd_scons.build_report import document
        report = document.requested()
        if report is not None:   # no build ran: the report says so
            document.write_up_to_date(report, "patch-torch", 0.0)
        return _result(folder, library, up_to_date=True)
    # From here on the folder holds no patch until this build has made one.
    up_to_date.clear_stamp(stamp_path)
    for path in (library, os.path.join(folder, PYTHON_LIBRARY), os.path.join(folder, TORCH_RECORD)):
        if os.path.lexists(path):
            os.unlink(path)
    up_to_date.write_json(os.path.join(folder, TORCH_RECORD), identity)
    variables = {"BUILD": ".", "CXX": os.environ.get("CXX") or "g++", "CUDA": "0", "PYTHON": "0",
                 "PCH": "auto", "UNITY": "auto", "LAUNCHER": os.environ.get("AUTOGRAD_LAUNCHER", "")}
    try:
        built = runner.run_scons(_SCONSTRUCT, folder, variables, jobs=jobs, verbose=verbose, label=LABEL,
                                 lock=lock, entry="patch-torch")
    except runner.BuildError as e:
        raise PatchError(_failure_line(e)) from None
    publish(linked, library)
    python_library, python_linked = os.path.join(folder, PYTHON_LIBRARY), os.path.join(folder, "obj", PYTHON_LIBRARY)
    if os.path.isfile(python_linked):
        publish(python_linked, python_library)
    elif os.path.lexists(python_library):
        os.unlink(python_library)   # (no own class any more)
    up_to_date.write_stamp(stamp_path, key, built.inputs_path, outputs=[library, linked])
    result = _result(folder, library)
    # (objects: the precompiled prelude's precompile, also a compile, is not a TU)
    result.compiled = [o for o in built.compiled if o.endswith((".o", ".os"))]
    result.linked = bool(built.linked)
    return result


def _failure_line(e: runner.BuildError) -> str:
    """One line: the refusal or the first error, and where the log is."""
    text = ""
    try:
        with open(e.log, errors="replace") as f:
            text = f.read()
    except OSError:
        pass
    missing = _UNDEFINED.search(text)
    if missing:
        return (f"{LABEL}: the patch uses {missing.group(1)}, which libtorch neither exports nor locates in its "
                f"symbol table: it cannot link (--functions-manual FunctionsManual.cpp compiles FunctionsManual's "
                f"helpers into the patch; log: {e.log})")
    first = e.first_error or str(e).splitlines()[0]
    return f"{LABEL}: {first} (log: {e.log})"


def _result(folder: str, library: str, up_to_date: bool = False) -> PatchResult:
    data = read_own(os.path.join(folder, "gen", PATCH_SUMMARY))
    summary = json.loads(data) if data else {}
    return PatchResult(folder, library, summary.get("patched", []), summary.get("edited", []),
                       summary.get("left_out", {}), summary.get("own_classes", []), summary.get("kernels", []),
                       summary.get("kernels_left_out", {}), up_to_date=up_to_date)

