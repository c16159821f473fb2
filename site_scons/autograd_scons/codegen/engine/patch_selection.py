"""Which Functions a patch of libtorch's own (EmitOptions.patch) defines,
and the edits it must refuse.

A patch replaces the out-of-line members of libtorch's generated classes in
a running torch (docs/patching-torch.md).  It can change a formula, nothing
else: libtorch's autograd kernels construct each class and fill its saved
members, and libtorch_cpu.so keeps most of FunctionsManual's helpers local.
So a Function can be patched when:

- libtorch has the class (a new entry is a new kernel: PyTorch rebuilt);
- its base and members are libtorch's, type for type (what the edit saves
  is what libtorch's kernel saves);
- libtorch reaches its members through symbols a preloaded library can
  replace (PatchTarget.bound_locally lists those it cannot);
- its formulas use no name that libtorch defines without a symbol the
  patch can reach (PatchTarget.unusable_helpers, read off the library by
  the tool: the helpers libtorch keeps local are reached through its
  symbol table, torch_patch/libtorch_locals.py; empty when
  FunctionsManual.cpp is compiled into the patch).

A Function *edited* (its info differs from the one torch's own specs give)
that cannot be patched is refused, located at its entry: leaving it out
would be a patch that silently does not do what was asked.  With
`PatchTarget.every`, the unedited ones that cannot be patched are left out
and counted by reason; without it, only the edited ones are patched.
`PatchTarget.only` narrows `every` to the Functions it names (a name that
is no Function of the specs is refused): those not named keep libtorch's
and are not counted.

    selection = select(units, target, out_dir)   # raises SpecError
    selection.units, selection.left_out, selection.summary()
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from ..emit.options import PatchTarget
from autograd_scons.base.errors import SpecError
from .keys import digest, dumps, generator_version, hash_of
from ..parse.libtorch_classes import LibtorchClass, normalise_type, read_classes
from ..tree import PATCH_REFERENCE
from .units import Kind, LoadedSpecs, Unit, load_units
from .writer import write_atomic

# Why an unedited Function is left out of `--all` (the report's keys).
NOT_IN_LIBTORCH = "not a class of libtorch's"
BOUND_LOCALLY = "bound to libtorch itself"
OTHER_MEMBERS = "members other than libtorch's"
HIDDEN_HELPER = "uses a name libtorch defines with no usable symbol"

# A name used unqualified (not a member, not qualified), and a member used
# on a saved value: `self_info.zeros(`.
_NAME = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)")
_MEMBER = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)\s*\.\s*([A-Za-z_]\w*)\s*\(")
_REBUILD = "this edit needs PyTorch rebuilt"


@dataclass
class Selection:
    units: list = field(default_factory=list)        # the Functions to define, in order
    edited: list = field(default_factory=list)       # names of those that differ from torch's own
    left_out: dict = field(default_factory=dict)     # reason -> [names] (with `every`)
    helpers: dict = field(default_factory=dict)      # unusable helper -> [names] that call it
    own: list = field(default_factory=list)          # Functions that are the patch's own classes
    kernels: list = field(default_factory=list)      # ATen ops whose Autograd kernel the patch replaces
    kernels_left_out: dict = field(default_factory=dict)   # reason -> [ops] keeping libtorch's

    def summary(self) -> str:
        """What the generated folder records of the selection (patch.json)."""
        return json.dumps({"patched": [u.name for u in self.units if u.kind is Kind.FUNCTION],
                           "edited": self.edited, "left_out": self.left_out, "hidden_helpers_called": self.helpers,
                           "own_classes": self.own, "kernels": self.kernels,
                           "kernels_left_out": self.kernels_left_out}, indent=1, sort_keys=True) + "\n"


def select(units: list[Unit], target: PatchTarget, out_dir: Optional[str] = None,
           specs: Optional[LoadedSpecs] = None) -> Selection:
    """The Functions of `units` to patch (see the module's docstring), and
    the ATen kernels (patch_kernels.py) of `specs` (the update's parsed
    specs: parsed once) the patch needs or (PatchTarget.kernels) can have.
    `out_dir` keeps the reference's digests between runs."""
    classes = _installed_classes(target.functions_h)
    reference = reference_digests(target, out_dir)
    hidden, bound = dict(target.unusable_helpers), frozenset(target.bound_locally)
    out = Selection()
    own: list = []
    only = _named(units, target)
    for u in units:
        if u.kind is not Kind.FUNCTION:
            continue
        edited = reference.get(u.name) != hash_of(u.subject)
        if not edited and (not target.every or (only and u.name not in only)):
            continue
        problem = _problem(u, classes.get(u.name), hidden, bound)
        if problem is None:
            out.units.append(dataclasses.replace(u, bound=False))   # libtorch's class: no bindings of ours
            if edited:
                out.edited.append(u.name)
            continue
        reason, message = problem
        if edited and reason in (OTHER_MEMBERS, NOT_IN_LIBTORCH) and specs is not None:
            own.append((u, message))   # the patch's own class, created by kernels of its own
            continue
        if edited:
            raise SpecError(message, *u.where())
        out.left_out.setdefault(reason, []).append(u.name)
        if reason.startswith(HIDDEN_HELPER):
            for h in sorted(called(u.subject) & set(hidden)):
                out.helpers.setdefault(h, []).append(u.name)
    for u, _ in own:   # (an own class calls libtorch's helpers too)
        calls = sorted(called(u.subject) & set(hidden))
        if calls:
            raise SpecError(f"'{u.name}' uses {calls[0]}, which libtorch defines with no symbol a patch can "
                            f"reach: {hidden[calls[0]]}", *u.where())
    if own or target.kernels:
        from .patch_kernels import add_kernels   # (it reads the specs' native functions: only then)
        add_kernels(out, own, target, specs, classes)
    return out


def _named(units: list[Unit], target: PatchTarget) -> frozenset:
    """PatchTarget.only, every name a Function of the specs."""
    names = {u.name for u in units if u.kind is Kind.FUNCTION}
    unknown = sorted(set(target.only) - names)
    if unknown:
        shown = ", ".join(repr(n) for n in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
        raise SpecError(f"only= names {len(unknown)} that are no Function of these specs: {shown}",
                        target.reference[1])
    return frozenset(target.only)


def called(info) -> set[str]:
    """What the formulas of `info` use that a helper list can name: the
    names they use unqualified, and `Class::member` for each member they
    call on a saved value of a class (`self_info.zeros()`:
    `TypeAndSize::zeros`)."""
    classes = {a.name: str(getattr(a.type, "name", a.type)).rpartition("::")[2]
               for a in tuple(info.all_saved_inputs) + tuple(info.all_saved_outputs)}
    out: set = set()
    for d in info.derivatives:
        out.update(m.group(1) for m in _NAME.finditer(d.formula))
        out.update(f"{classes[m.group(1)]}::{m.group(2)}" for m in _MEMBER.finditer(d.formula)
                   if m.group(1) in classes)
    return out


def _problem(u: Unit, theirs: Optional[LibtorchClass], hidden: dict,
             bound: frozenset) -> Optional[tuple[str, str]]:
    """(reason, one-line message) why `u` cannot be patched, or None."""
    from ..emit.functions.function_files import class_layout  # (the emitter: on use, as units.py does)
    name = u.name
    if theirs is None:
        return NOT_IN_LIBTORCH, (f"'{name}' is not a class of the installed libtorch (a new entry, or a "
                                 f"renumbered one): its class and the autograd kernel that creates it "
                                 f"exist only in a rebuilt libtorch; {_REBUILD}")
    if name in bound:
        return BOUND_LOCALLY, (f"libtorch binds the members of '{name}' to itself (hidden or protected "
                               f"visibility, or -Bsymbolic-functions): no other library can replace them")
    base, members = class_layout(u.info)
    mine = tuple((normalise_type(t), n) for t, n in members)
    if base != theirs.base:
        return OTHER_MEMBERS, (f"'{name}' would derive from {base} where libtorch's derives from "
                               f"{theirs.base}; {_REBUILD}")
    if mine != theirs.members:
        return OTHER_MEMBERS, f"'{name}' {_member_difference(mine, theirs.members)}; {_REBUILD}"
    calls = sorted(called(u.subject) & set(hidden))
    if calls:
        why = hidden[calls[0]]
        return f"{HIDDEN_HELPER} ({why})", (
            f"'{name}' uses {calls[0]}, which libtorch defines with no symbol a patch can reach: {why}; "
            f"--functions-manual FunctionsManual.cpp, of the PyTorch version installed, compiles "
            f"FunctionsManual's helpers into the patch")
    return None


def _member_difference(mine: tuple, theirs: tuple) -> str:
    """What the edit changes of the saved members, said of the first one."""
    their_names = dict((n, t) for t, n in theirs)
    my_names = dict((n, t) for t, n in mine)
    for t, n in mine:
        if n not in their_names:
            return (f"saves {n} ({t}), which libtorch's class does not (libtorch's autograd kernel fills "
                    f"the saved values)")
        if their_names[n] != t:
            return f"saves {n} as {t}, which libtorch's class holds as {their_names[n]}"
    for t, n in theirs:
        if n not in my_names:
            return f"no longer saves {n} ({t}), which libtorch's class holds"
    return "saves its values in another order than libtorch's class"


def _installed_classes(path: str) -> dict[str, LibtorchClass]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SpecError(f"cannot read libtorch's class declarations: {e.strerror}", path) from None
    classes = read_classes(text)
    if not classes:
        raise SpecError("no autograd Function class found: not libtorch's generated Functions.h", path)
    return classes


def reference_digests(target: PatchTarget, out_dir: Optional[str] = None) -> dict[str, str]:
    """{Function: digest of its info} as torch's own specs give them,
    kept in `out_dir` keyed by those files' bytes and the generator."""
    nf, d, tags = target.reference
    key: list = []
    for path in (nf, d, tags):
        if path is None:
            key.append(None)
            continue
        try:
            with open(path, "rb") as f:
                key.append(digest(f.read()))
        except OSError as e:
            raise SpecError(f"cannot read torch's own specs: {e.strerror}", path) from None
    key.append(generator_version())
    cache = os.path.join(out_dir, PATCH_REFERENCE) if out_dir else None
    if cache:
        try:
            with open(cache, encoding="utf-8") as f:
                kept = json.load(f)
            if kept.get("key") == key and isinstance(kept.get("digests"), dict):
                return kept["digests"]
        except (OSError, ValueError, AttributeError):
            pass   # missing or damaged: made again
    digests = {u.name: hash_of(u.subject) for u in load_units(nf, d, tags, kernels=False)}
    if cache and out_dir and os.path.isdir(out_dir):
        write_atomic(cache, dumps({"key": key, "digests": digests}).encode())
    return digests
