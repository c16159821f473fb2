"""bench_rebuild.py's scenarios, as data, and the edits they make to
temporary copies of torch's specs (not a benchmark itself).

A scenario says what it starts from (an up-to-date tree, or nothing: cold),
which spec set it builds (torch's, or the example extension in specs/), the
edit, which sides run, with which scons arguments and job count, which of
ours' compiles are real, and the counts every run of ours must show.  To add
a scenario, add a row to SCENARIOS; bench_rebuild.py runs whatever is listed.

The edits are chosen so that each touches exactly the Functions named (no
foreach or view_copy Function derives from them, no renumbering): checked on
every run.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

FORMULA_1 = ["logcumsumexp(Tensor self, int dim) -> Tensor"]
FORMULA_10 = [
    "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
    "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
    "diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor",
    "special_erfcx(Tensor self) -> Tensor",
    "erfinv(Tensor self) -> Tensor",
    "hardsigmoid(Tensor self) -> Tensor",
    "hardswish(Tensor self) -> Tensor",
    "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
    "linalg_matrix_exp(Tensor self) -> Tensor",
    "mvlgamma(Tensor self, int p) -> Tensor",
]
# Its derivatives entry has a Default and an AutogradNestedTensor formula:
# SumBackward1 and SumBackwardAutogradNestedTensor1.
SCHEMA = "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
SCHEMA_FUNCTIONS = 2
# Removed one per repetition, then added back by the "add" scenario.
REMOVE = [
    "special_i1(Tensor self) -> Tensor",
    "special_i1e(Tensor self) -> Tensor",
    "rad2deg(Tensor self) -> Tensor",
    "deg2rad(Tensor self) -> Tensor",
    "sinc(Tensor self) -> Tensor",
    "trace(Tensor self) -> Tensor",
    "flip(Tensor self, int[] dims) -> Tensor",
    "rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor",
    "special_entr(Tensor self) -> Tensor",
    "renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor",
]
# "A changed header": one Function's formula starts using `result`, so the
# Function saves a new value: its generated header (a new member) and its
# Python bindings (a new _saved_result property) change, so its bucket, its
# edit TU and its binding TU recompile.  That is the header a user's edit
# changes; a header every Function includes (the prelude) is the generator's
# or torch's to change, and recompiles everything: a cold build.  One entry
# per repetition (an edited unit stays out of its bucket after the first);
# each derives no other Function (no foreach twin).
HEADER = [
    "asinh(Tensor self) -> Tensor",
    "digamma(Tensor self) -> Tensor",
    "atanh(Tensor self) -> Tensor",
    "i0(Tensor self) -> Tensor",
    "angle(Tensor self) -> Tensor",
]
TEMPLATE_OP = "MulBackward0"   # the per-TU floor, and the stand-ins' model

# Sides: ours_generate (`scons generate`), ours_full (`scons -jN`: generate,
# compile, relink), ours_cli (`python -m autograd_scons generate`, cold only),
# torchgen (its generation; + compiling Functions.cpp when it changed, unless
# --quick), empty (an empty SConstruct's `scons`).
EDIT_SIDES = ("ours_generate", "ours_full", "torchgen")


@dataclass(frozen=True)
class Scenario:
    name: str
    label: str
    edit: tuple = ()            # () | ("formulas", schemas) | ("schema",) | ("header",) | ("remove",) | ("add",)
    expect: tuple | None = None  # (Functions regenerated, removed, objects recompiled); None: all (cold).
    #                              Objects None: what the layout decides (codegen/engine/buckets.py: edit TUs,
    #                              and buckets whose file is rewritten), checked against the compiler's log
    sides: tuple = EDIT_SIDES
    specs: str = "torch"        # "torch" or "example" (specs/, SPECS=example)
    cold: bool = False          # a fresh build folder: everything is generated (and compiled)
    scons_args: tuple = ()      # more `scons` arguments for ours_full
    jobs: str = "bench"         # "bench": -j<--jobs>; "default": no -j (the tool's default)
    real: str = "quick"         # ours_full's compiles: "always" real, "quick": real unless --quick
    #                             except in QUICK_REAL, "never": stand-ins
    long: bool = False          # hours of CPU: runs only when named in --scenarios
    quick: bool = True          # part of --quick
    quick_torchgen: bool = False  # --quick runs torchgen's generation too
    edited: int = 0             # derivatives entries edited (the chart's x)
    identical: int = 0          # units re-rendered to unchanged text that are no miss (the example's op
    #                             kernels of an edited entry: their key holds the entry, their text not)
    after: str = ""             # an example edit: builds on the build folder of this cold scenario


# The example's edit loop (specs/, `scons` with default options and jobs,
# real compiles): a cold build, one formula edited the first time since, the
# same formula again; each with the precompiled prelude (PCH=auto, the
# default) and without it (PCH=0), side by side.  ScaleBackward0 compiles in
# its edit TU, beside the digest of the generated code (cache_key.cpp, a TU
# with no header: codegen/emit/cache_key.py); the op kernels of its entry
# (myops::scale, myops::scale_) are re-rendered to the same text (their key
# holds the entry).
_LOOP = dict(specs="example", sides=("ours_full",), jobs="default", real="always", quick=False)
_LOOP_EDIT = dict(_LOOP, edit=("example_formula",), expect=(1, 0, 2), identical=2, edited=1)


def _loop(pch: bool) -> list[Scenario]:
    sfx, args = ("", ()) if pch else ("_nopch", ("PCH=0",))
    how = "with the precompiled prelude (default)" if pch else "without the precompiled prelude (PCH=0)"
    return [Scenario("cold_example" + sfx, f"cold build of the example, {how}", cold=True, scons_args=args,
                     **_LOOP),
            Scenario("example_first" + sfx, f"the example: 1 formula edited, first time, {how}", scons_args=args,
                     after="cold_example" + sfx, **_LOOP_EDIT),
            Scenario("example_again" + sfx, f"the example: the same formula edited again, {how}", scons_args=args,
                     after="cold_example" + sfx, **_LOOP_EDIT)]


SCENARIOS = [s for pair in zip(_loop(True), _loop(False)) for s in pair] + [  # side by side
    # without Python bindings: what they cost a cold build, side by side with cold_example
    Scenario("cold_example_nopython", "cold build of the example, PYTHON=0 (no Python bindings)", specs="example",
             cold=True, sides=("ours_full",), jobs="default", real="always", quick=False, scons_args=("PYTHON=0",)),
    Scenario("cold", "cold generation", cold=True, sides=("ours_generate", "ours_cli", "torchgen"),
             quick_torchgen=True),
    Scenario("cold_build", "cold build of torch's Functions (scons UNITY=N; torchgen: Functions.cpp), -j2",
             cold=True, sides=("ours_full", "torchgen"), real="always", long=True, quick=False),
    # On one machine this shows the plumbing, not a speed-up (docs/scaling-out.md).
    Scenario("distcc_cold", "cold build of torch's Functions through distcc, loopback daemon, -j8",
             cold=True, sides=("distcc",), long=True, quick=False),
    Scenario("noop", "no-op", expect=(0, 0, 0), sides=EDIT_SIDES + ("empty",), quick_torchgen=True),
    # its edit TU (its bucket keeps its old text, overridden at link) and the
    # digest's TU (cache_key.cpp: every edit of generated code recompiles it)
    Scenario("formula1", "1 formula edited", ("formulas", FORMULA_1), (1, 0, 2), quick_torchgen=True,
             edited=1),
    # edited again: exactly its edit TU and the digest's again
    Scenario("formula1_again", "the same formula edited again", ("formulas", FORMULA_1), (1, 0, 2), edited=1),
    Scenario("formula10", "10 formulas edited", ("formulas", FORMULA_10), (10, 0, None), edited=10),
    Scenario("schema", "1 native schema edited", ("schema",), (SCHEMA_FUNCTIONS, 0, None), edited=1),
    # its edit TU, its bucket (rewritten without it), its binding TU, and the
    # edit TU of units earlier scenarios left out of that bucket (they go back)
    Scenario("header", "1 Function's header changed (its formula saves a new value)", ("header",), (1, 0, None),
             edited=1),
    # its bucket, and the edit TU of units that go back into it
    Scenario("remove", "1 entry removed", ("remove",), (0, 1, None), edited=1),
    # its edit TU, its binding TU (a new Function's Python bindings), the digest's TU
    Scenario("add", "1 entry added", ("add",), (1, 0, 3), edited=1),
]
BY_NAME = {s.name: s for s in SCENARIOS}
# --quick compiles ours for real in these only (stand-ins elsewhere).
QUICK_REAL = ("formula1",)
# the chart: scenarios on the line, and markers at x=1
LINE = ("noop", "formula1", "formula10")
MARKERS = {"formula1_again": "s", "schema": "^", "header": "P", "remove": "v", "add": "D"}


class Specs:
    """The temporary copies of torch's three yaml files, and the edits."""

    def __init__(self, folder: str, sources: tuple[str, str, str]):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        for src in sources:
            shutil.copy(src, folder)
        self.nf = os.path.join(folder, "native_functions.yaml")
        self.d = os.path.join(folder, "derivatives.yaml")
        self.tags = os.path.join(folder, "tags.yaml")
        with open(self.d) as f:
            pristine = f.read()
        self.entries = {}  # schema -> its pristine entry text (up to the next one)
        for chunk in re.split(r"\n(?=- name: )", pristine):
            if chunk.startswith("- name: "):
                self.entries[chunk.split("\n", 1)[0][len("- name: "):]] = chunk.rstrip("\n") + "\n"
        for s in FORMULA_1 + FORMULA_10 + [SCHEMA] + REMOVE + HEADER:
            if s not in self.entries:
                raise SystemExit(f"bench_rebuild: no derivatives entry '{s}' in {sources[2]}")
        self.removed = None
        self.factor = 1

    def apply(self, edit: tuple, i: int) -> None:
        """Make the scenario's edit (repetition i): every formula edit uses a new factor."""
        if not edit:
            return
        kind = edit[0]
        if kind == "formulas":
            self.factor += 1
            self.edit_formulas(edit[1], self.factor)
        elif kind == "schema":
            self.edit_schema(i)
        elif kind == "header":
            self.save_result(HEADER[i % len(HEADER)])
        elif kind == "remove":
            self.remove(REMOVE[i % len(REMOVE)])
        elif kind == "add":
            self.add_back()
        else:
            raise ValueError(f"unknown edit {edit!r}")

    def _read(self, path: str) -> str:
        with open(path) as f:
            return f.read()

    def _sub(self, path: str, old: str, new: str) -> None:
        text = self._read(path)
        if text.count(old) != 1:
            raise SystemExit(f"bench_rebuild: expected one {old[:60]!r}... in {path}")
        with open(path, "w") as f:
            f.write(text.replace(old, new))

    def _current(self, schema: str, prefix: bool = False) -> str:
        """The entry's current text (from its `- name:` line to the next entry)."""
        name = re.escape(schema) + (r".*" if prefix else "")
        m = re.search(r"^- name: " + name + r"\n(?:(?!- name: ).*\n)*", self._read(self.d), re.M)
        if m is None:
            raise SystemExit(f"bench_rebuild: entry '{schema}' not in {self.d}")
        return m.group(0)

    def edit_formulas(self, schemas: list[str], factor: int) -> None:
        """`self: F` becomes `self: (F) * factor`."""
        for s in schemas:
            pristine = self.entries[s]
            line = next(ln for ln in pristine.split("\n") if ln.startswith("  self: "))
            new = pristine.replace(line, f"  self: ({line[len('  self: '):]}) * {factor}", 1)
            self._sub(self.d, self._current(s), new)

    def edit_schema(self, n: int) -> None:
        """A new defaulted keyword argument (a new name each time) in the
        native function, in its out= overload (torchgen requires the two to
        agree) and in the name of its derivatives entry."""
        text = self._read(self.nf)
        new = SCHEMA.replace(") -> Tensor", f", bool bench_{n}=False) -> Tensor")
        for func, after in ((r"sum\.dim_IntList\(", new), (r"sum\.IntList_out\(", None)):
            line = re.search(r"^- func: " + func + r".*$", text, re.M).group(0)
            if after is None:  # ..., ScalarType? dtype=None[, bool bench_k=False], Tensor(a!) out)
                after = re.sub(r"(, bool bench_\d+=False)?, Tensor\(a!\) out\)",
                               f", bool bench_{n}=False, Tensor(a!) out)", line[len("- func: "):])
            text = text.replace(line, f"- func: {after}", 1)
        with open(self.nf, "w") as f:
            f.write(text)
        cur = self._current("sum.dim_IntList(", prefix=True)
        self._sub(self.d, cur, cur.replace(cur.split("\n", 1)[0], f"- name: {new}", 1))

    def save_result(self, schema: str) -> None:
        """`self: F` becomes `self: (F) + 0 * result`: the Function saves its result too."""
        line = next(ln for ln in self.entries[schema].split("\n") if ln.startswith("  self: "))
        cur = self._current(schema)
        self._sub(self.d, cur, cur.replace(line, f"  self: ({line[len('  self: '):]}) + 0 * result", 1))

    def remove(self, schema: str) -> None:
        cur = self._current(schema)
        self.removed = (self._read(self.d).index(cur), cur)
        self._sub(self.d, cur, "")

    def add_back(self) -> None:
        if self.removed is None:
            raise SystemExit("bench_rebuild: the 'add' scenario adds back what 'remove' removed: run both")
        at, cur = self.removed
        text = self._read(self.d)
        with open(self.d, "w") as f:
            f.write(text[:at] + cur + text[at:])
        self.removed = None


class ExampleSpecs:
    """The example extension's derivatives.yaml in a checkout copy, and its edit."""

    def __init__(self, checkout: str):
        self.d = os.path.join(checkout, "specs", "derivatives.yaml")
        self.factor = 1

    def apply(self, edit: tuple, i: int) -> None:
        """`scale`'s `self: grad * alpha` becomes `self: (grad * alpha) * n`, a new n each time."""
        with open(self.d) as f:
            text = f.read()
        found = re.findall(r"^  self: \(?grad \* alpha\)?(?: \* \d+)?$", text, re.M)
        if len(found) != 1:
            raise SystemExit(f"bench_rebuild: expected one 'self: grad * alpha' formula in {self.d}")
        self.factor += 1
        with open(self.d, "w") as f:
            f.write(text.replace(found[0], f"  self: (grad * alpha) * {self.factor}"))
