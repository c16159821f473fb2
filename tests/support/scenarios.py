"""The edit scenarios on the tiny extension (tests/fixtures/tiny_ext), as data,
run at two levels: codegen.engine.incremental alone (tests/codegen/engine/test_incremental.py) and
`scons` with the stand-in compiler (tests/tool/test_scons_incremental.py).

Each scenario is a list of text substitutions in the two spec files and what
must follow: which Functions are regenerated (their text changed), which are
removed, the Functions after, and what compiles.  The compile rules
(codegen/engine/buckets.py) with the default layout, which for the tiny extension's
three Functions is one bucket, and two jobs (two edit TUs), at both levels
with the override the SCons tool uses on Linux: an edited Function whose
header did not change compiles in its edit TU and its bucket is not
recompiled (its old text there is overridden at link); one whose header
changed compiles in its edit TU and its bucket recompiles once, without it;
a removal recompiles its bucket; a new Function compiles in its edit TU.
The Python bindings of the three Functions are one binding TU
(codegen/emit/python_bindings/binding_units.py): rewritten only when what a Function
saves (or its name, or the set of Functions) changes, recompiled then or when
a Function header it includes changed; a formula edit that saves the same
values recompiles no bindings.
test_scons_example-level checks of the next edit (its edit TU only) are in
tests/tool/test_build_failures.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from autograd_scons.codegen.engine.buckets import slot_of
from support.spec_facts import REPO

TINY = os.path.join(REPO, "tests", "fixtures", "tiny_ext")
FILES = {"nf": "native_functions.yaml", "d": "derivatives.yaml"}
OPS = ("MulBackward0", "MulBackward1", "ScaleBackward0")
BUCKET = "unity/bucket_0.cpp"   # three Functions, -j up to 8: one bucket
BINDINGS = "python/bindings_0.cpp"  # three Functions: one binding TU
CACHE_KEY = "cache_key.cpp"      # the digest of the generated code (codegen/emit/cache_key.py)
JOBS = 2                         # both levels: two edit TUs

MUL_SCALAR = """- name: mul.Scalar(Tensor self, Scalar other) -> Tensor
  self: grad * other
"""
SCALE = "scale(Tensor self, float alpha) -> Tensor"
SCALE_FAST = "scale(Tensor self, float alpha, *, bool fast=False) -> Tensor"
FORMULA = ("d", "self: grad * alpha", "self: grad * alpha * 2")
# the same Function, now saving `self` too: its header (members) and its bindings change
FORMULA_SAVES = ("d", "self: grad * alpha", "self: grad * alpha * self")
# a second formula (of MulBackward0), for scenarios that need two Functions changed
FORMULA_MUL = ("d", "  self: grad * other\n  other:", "  self: other * grad\n  other:")
YAML_ERROR = ("d", "  self: grad * alpha", "  self: [grad * alpha")


@dataclass(frozen=True)
class Scenario:
    name: str
    edits: tuple = ()                 # (file key, old, new), applied in order
    regenerated: tuple = ()           # Functions re-rendered to new text (= objects recompiled)
    removed: tuple = ()
    ops: tuple = OPS                  # the Functions afterwards
    reasons: dict = field(default_factory=dict)   # Function -> why it was re-keyed
    parsed: bool = True               # the specs had to be parsed at all
    alone: tuple = ()                 # Functions out of their bucket afterwards, in the edit TUs
    shadowed: tuple = ()              # those whose old text stays in the bucket, overridden at link
    bucket_recompiles: bool = False   # the one bucket's TU is rewritten and recompiles
    bindings_rewritten: bool = False  # the binding TU's text changes
    bindings_recompile: bool = False  # it recompiles (rewritten, or a header it includes changed)

    @property
    def edit_tus(self) -> list[str]:
        return sorted({f"unity/edited_{slot_of(op, JOBS)}.cpp" for op in self.alone})

    @property
    def sources(self) -> list[str]:
        """What the update says to compile, in link order: the edit TUs, the
        bucket, the bindings, the digest."""
        return self.edit_tus + [BUCKET, BINDINGS, CACHE_KEY]

    @property
    def code_changed(self) -> bool:
        """Whether any generated text changed: then the digest did too."""
        return bool(self.regenerated or self.removed)

    def apply(self, folder: str) -> None:
        for key, old, new in self.edits:
            edit(os.path.join(folder, FILES[key]), old, new)

    @property
    def objects(self) -> list[str]:
        """What `scons` compiles from the cold layout: the edit TUs (all new),
        the bucket, the bindings, the digest."""
        return sorted([os.path.basename(t)[:-4] + ".os" for t in self.edit_tus]
                      + (["bucket_0.os"] if self.bucket_recompiles else [])
                      + (["bindings_0.os"] if self.bindings_recompile else [])
                      + (["cache_key.os"] if self.code_changed else []))

    @property
    def linked(self) -> list[str]:
        """The objects on the link line: a bucket holding shadowed old text is
        linked as its weakened copy (site_scons/autograd_scons/tool/weaken.py)."""
        bucket = "bucket_0.weak.os" if self.shadowed else "bucket_0.os"
        return sorted([bucket, "bindings_0.os", "cache_key.os"] +
                      [os.path.basename(t)[:-4] + ".os" for t in self.edit_tus])


def edit(path: str, old: str, new: str) -> None:
    with open(path) as f:
        text = f.read()
    assert old in text, f"{old!r} not in {path}"
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))


EDITS = [
    Scenario("noop", parsed=False),
    Scenario("comment", edits=(("d", "# Backward formulas", "# Edited comment. Backward formulas"),)),
    Scenario("formula", edits=(FORMULA,), regenerated=("ScaleBackward0",),
             reasons={"ScaleBackward0": "derivatives entry changed"},
             alone=("ScaleBackward0",), shadowed=("ScaleBackward0",)),
    # a new defaulted argument: schema and entry name change together
    Scenario("schema", edits=(("nf", SCALE, SCALE_FAST), ("d", SCALE, SCALE_FAST)),
             regenerated=("ScaleBackward0",), reasons={"ScaleBackward0": "derivatives entry changed"},
             alone=("ScaleBackward0",), bucket_recompiles=True, bindings_recompile=True),
    # what the Function saves changes: its header, hence its bucket, and its bindings
    Scenario("formula saves more", edits=(FORMULA_SAVES,), regenerated=("ScaleBackward0",),
             reasons={"ScaleBackward0": "derivatives entry changed"}, alone=("ScaleBackward0",),
             bucket_recompiles=True, bindings_rewritten=True, bindings_recompile=True),
    # the native function's key changes, its Function's text does not
    Scenario("native only", edits=(("nf", f"myops::{SCALE}\n  variants: function",
                                    f"myops::{SCALE}\n  variants: function\n  dispatch:\n    CPU: scale_cpu"),),
             reasons={"ScaleBackward0": "native function changed"}),
    # mul.int takes the name MulBackward1; mul.Scalar moves to MulBackward2
    Scenario("renumbering",
             edits=(("nf", "- func: myops::mul.Scalar",
                     "- func: myops::mul.int(Tensor self, int other) -> Tensor\n  variants: function\n\n"
                     "- func: myops::mul.Scalar"),
                    ("d", MUL_SCALAR, "- name: mul.int(Tensor self, int other) -> Tensor\n"
                     "  self: grad * other\n\n" + MUL_SCALAR)),
             regenerated=("MulBackward1", "MulBackward2"),
             ops=("MulBackward0", "MulBackward1", "MulBackward2", "ScaleBackward0"),
             reasons={"MulBackward1": "derivatives entry changed", "MulBackward2": "renamed from MulBackward1"},
             alone=("MulBackward1", "MulBackward2"), bucket_recompiles=True, bindings_rewritten=True,
             bindings_recompile=True),
    Scenario("entry removed", edits=(("d", MUL_SCALAR, ""),), removed=("MulBackward1",),
             ops=("MulBackward0", "ScaleBackward0"), reasons={"MulBackward1": "no longer in the specs"},
             bucket_recompiles=True, bindings_rewritten=True, bindings_recompile=True),
]
BY_NAME = {s.name: s for s in EDITS}
