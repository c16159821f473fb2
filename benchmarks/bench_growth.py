#!/usr/bin/env python3
"""How generation cost grows with the specs: K synthetic copies of torch's.

For K = 1, 2, 4, 8 it writes specs holding K copies of torch 2.13's
native_functions.yaml and derivatives.yaml (copy c > 0 renames every
operator, see `renamed`), then times, in fresh subprocesses, `python -m
codegen generate` (what the SCons tool runs while reading the SConscripts,
with its options: --override, -j2 layout):

  cold      into an empty folder;
  no-op     again, nothing changed (the manifest's fast path: no YAML read);
  one edit  one formula of the first copy edited (`logcumsumexp`'s
            `self: F` becomes `self: (F) * n`): exactly one Function must be
            regenerated (checked: a miscount exits 1).

Each figure is the median of --repeat runs (alternating K's order); the
table gives each against K=1 and the one edit against the cold generation.
Targets: the one edit at 8x costs at most 0.6x the cold generation at 8x,
and neither grows faster than K (CPU ratio to K=1 at most 1.1 K: a shared
machine varies by more than 5% between runs).  Both are given in CPU time
(user + sys of the run), which a loaded machine inflates least, and wall.

    python benchmarks/bench_growth.py [--repeat 3] [--ks 1,2,4,8] [--json out.json]
    python benchmarks/bench_growth.py --baseline DIR         # and DIR's generator, side by side
    python benchmarks/bench_growth.py --report out.json     # the table again, from the figures
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from _common import FUNCTIONS_MANUAL, REPO, child_env, machine, spec_paths, summarize, timed

EDITED = "logcumsumexp(Tensor self, int dim) -> Tensor"
_FOREACH = "_foreach_"
_AUGMENTED = {"add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or"}
_FUNC = re.compile(r"^(- (?:func|name): *)([A-Za-z0-9_]+)(?=[.(])", re.M)
_REFS = re.compile(r"^(  (?:structured_delegate|autogen): )(.+)$", re.M)
_SUMMARY = re.compile(r"(\d+) regenerated, (\d+) unchanged, (\d+) removed")


def renamed(name: str, c: int) -> str:
    """Operator `name` in copy c: a suffix that keeps what torchgen's
    matching reads from names (an in-place op's trailing underscore, a
    dunder's augmented form, `_foreach_X` of X, the view_copy `X_copy` of
    X, the `X_functional` variant of X)."""
    if c == 0:
        return name
    if name.startswith(_FOREACH):
        return _FOREACH + renamed(name[len(_FOREACH):], c)
    dunder = re.fullmatch(r"__([^_]+)__", name)
    if dunder:  # a dunder name has no underscore inside: __iand__ becomes and_k1_ (in-place)
        base = dunder.group(1)
        return f"{base[1:]}_k{c}_" if base[1:] in _AUGMENTED and base[0] == "i" else f"{base}_k{c}"
    base = name.rstrip("_")
    tail = name[len(base):]
    for kept in ("_copy", "_functional"):  # X_copy (view_copy of X), X_functional (functional X)
        if base.endswith(kept) and base != kept:
            return renamed(base[:-len(kept)], c) + kept + tail
    return f"{base}_k{c}{tail}"


def _rename_refs(m: re.Match, c: int) -> str:
    refs = [r.strip() for r in m.group(2).split(",")]
    return m.group(1) + ", ".join(renamed(r.split(".", 1)[0], c) + r[len(r.split(".", 1)[0]):] for r in refs)


def copy_of(text: str, c: int) -> str:
    """A spec file's text with every operator of copy c renamed."""
    text = _FUNC.sub(lambda m: m.group(1) + renamed(m.group(2), c), text)
    return _REFS.sub(lambda m: _rename_refs(m, c), text)


def write_specs(folder: str, k: int) -> tuple[str, str, str]:
    """(native_functions, tags, derivatives) of K copies in `folder`."""
    nf, tags, d = spec_paths()
    os.makedirs(folder, exist_ok=True)
    out = []
    for src in (nf, d):
        with open(src) as f:
            text = f.read()
        dst = os.path.join(folder, os.path.basename(src))
        with open(dst, "w") as f:
            f.write("\n".join(copy_of(text, c) for c in range(k)))
        out.append(dst)
    shutil.copy(tags, folder)
    return out[0], os.path.join(folder, "tags.yaml"), out[1]


def edit(derivatives: str, n: int) -> None:
    """The first copy's `logcumsumexp` formula, a new factor each time."""
    with open(derivatives) as f:
        text = f.read()
    head = f"- name: {EDITED}\n"
    at = text.index(head) + len(head)
    line_end = text.index("\n", at)
    line = text[at:line_end]
    if not line.startswith("  self: "):
        raise SystemExit(f"bench_growth: expected '  self: ' after {head!r}, found {line!r}")
    formula = re.sub(r"^\((.*)\) \* \d+$", r"\1", line[len("  self: "):])
    with open(derivatives, "w") as f:
        f.write(text[:at] + f"  self: ({formula}) * {n}" + text[line_end:])


def generate(specs: tuple[str, str, str], out: str, checkout: str) -> tuple[float, float, tuple[int, int, int]]:
    """(wall, CPU, (regenerated, unchanged, removed)) of one `python -m autograd_scons
    generate` of the generator in `checkout` (run from there: cwd first on sys.path)."""
    nf, tags, d = specs
    cmd = [sys.executable, "-m", "autograd_scons", "generate", "--native-functions", nf, "--tags", tags,
           "--derivatives", d, "--out", out, "--include", FUNCTIONS_MANUAL, "--override", "--jobs", "2",
           "--quiet"]
    r = timed(cmd, cwd=checkout)
    m = _SUMMARY.search(r.stdout)
    if r.returncode or not m:
        raise SystemExit(f"bench_growth: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-3000:]}")
    return r.wall, r.cpu, tuple(int(x) for x in m.groups())


def measure(work: str, ks: list[int], repeat: int, sides: dict, log=print) -> tuple[dict, list[str]]:
    """side -> K -> {phase: figures}, plus the count problems found.  `sides`:
    name -> checkout whose generator runs; all run side by side, alternating."""
    specs = {k: write_specs(os.path.join(work, f"specs{k}"), k) for k in ks}
    figs: dict = {s: {k: {p: [] for p in ("cold", "noop", "edit", "cold_cpu", "edit_cpu")} for k in ks}
                  for s in sides}
    problems, units, n = [], {}, 0
    order = list(sides)
    for i in range(repeat):
        for k in ks if i % 2 == 0 else ks[::-1]:
            for side in order if i % 2 == 0 else order[::-1]:
                f, checkout = figs[side][k], sides[side]
                out = os.path.join(work, f"gen-{side}-{k}-{i}")
                w, cpu, (regen, unchanged, removed) = generate(specs[k], out, checkout)
                units[k] = regen + unchanged
                f["cold"].append(w)
                f["cold_cpu"].append(cpu)
                w, _, counts = generate(specs[k], out, checkout)
                f["noop"].append(w)
                if counts != (0, units[k], 0):
                    problems.append(f"{side} K={k} no-op: {counts} (regenerated, unchanged, removed)")
                n += 1
                edit(specs[k][2], n)
                w, cpu, counts = generate(specs[k], out, checkout)
                f["edit"].append(w)
                f["edit_cpu"].append(cpu)
                if counts != (1, units[k] - 1, 0):
                    problems.append(f"{side} K={k} one edit: {counts} (regenerated, unchanged, removed), "
                                    "expected 1 regenerated")
                log(f"[{i + 1}/{repeat}] {side} K={k}: {units[k]} units; cold {f['cold'][-1]:.2f} s, "
                    f"no-op {f['noop'][-1]:.2f} s, one edit {f['edit'][-1]:.2f} s ({f['edit_cpu'][-1]:.2f} s CPU)")
                shutil.rmtree(out, ignore_errors=True)
    res = {s: {k: {p: summarize(v) for p, v in figs[s][k].items()} | {"units": units[k]} for k in ks}
           for s in sides}
    return res, problems


def baseline_rows(res: dict) -> list[str]:
    """Ours against each other side (the baseline), per K: the one edit and cold, CPU."""
    rows = []
    for side in [s for s in res if s != "ours"]:
        rows += ["", f"Side by side in the same run, CPU seconds: ours against `{side}`:", "",
                 f"| K | cold: ours / {side} | one edit: ours / {side} | {side}'s one edit / its cold |",
                 "|---|---|---|---|"]
        for k in sorted(res["ours"]):
            o, b = res["ours"][k], res[side][k]

            def m(r, p):
                return r[p]["median"]
            rows.append(f"| {k} | {m(o, 'cold_cpu'):.2f} / {m(b, 'cold_cpu'):.2f} | {m(o, 'edit_cpu'):.2f} / "
                        f"{m(b, 'edit_cpu'):.2f} | {m(b, 'edit_cpu') / m(b, 'cold_cpu'):.2f}x |")
    return rows


def table(res: dict) -> tuple[str, list[dict]]:
    """The Markdown table and the targets (met or not), on CPU time (user +
    sys of the run: what a loaded machine inflates least) and on wall."""
    ks = sorted(res)
    base = res[ks[0]]
    rows = ["| K (copies of torch's specs) | units | cold generation: wall s (CPU s) | no-op: wall s "
            "| one formula edited: wall s (CPU s) | one edit / cold: CPU (wall) | cold / K=1: CPU "
            "| one edit / K=1: CPU | no-op / K=1: wall |",
            "|---|---|---|---|---|---|---|---|---|"]
    targets = []

    def med(r, p):
        return r[p]["median"]
    for k in ks:
        r = res[k]
        growth = {p: med(r, p) / med(base, p) for p in ("cold_cpu", "edit_cpu", "noop")}
        rows.append(f"| {k} | {r['units']} | {med(r, 'cold'):.2f} ({med(r, 'cold_cpu'):.2f}) | {med(r, 'noop'):.2f} "
                    f"| {med(r, 'edit'):.2f} ({med(r, 'edit_cpu'):.2f}) "
                    f"| {med(r, 'edit_cpu') / med(r, 'cold_cpu'):.2f}x ({med(r, 'edit') / med(r, 'cold'):.2f}x) "
                    f"| {growth['cold_cpu']:.2f} | {growth['edit_cpu']:.2f} | {growth['noop']:.2f} |")
        if k != ks[0]:
            worst = max(growth["cold_cpu"], growth["edit_cpu"]) / (k / ks[0])
            targets.append({"what": f"K={k}: largest CPU ratio to K={ks[0]} (cold, one edit), over {k // ks[0]} "
                                    "(at most linear, 10% for noise)", "value": worst, "limit": "<= 1.1",
                            "ok": worst <= 1.1})
    top = res[ks[-1]]
    for what, e in (("CPU", med(top, "edit_cpu") / med(top, "cold_cpu")), ("wall", med(top, "edit") / med(top, "cold"))):
        targets.append({"what": f"K={ks[-1]}: one edit / cold generation, {what}", "value": e, "limit": "<= 0.6",
                        "ok": e <= 0.6})
    rows += ["", "Medians of the repetitions, one fresh `python -m autograd_scons generate` each; CPU: user + sys.", ""]
    rows += [f"- {t['what']}: {t['value']:.2f} (target {t['limit']}): {'met' if t['ok'] else 'NOT MET'}"
             for t in targets]
    return "\n".join(rows) + "\n", targets


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each K (default %(default)s)")
    ap.add_argument("--ks", default="1,2,4,8", help="copy counts, comma-separated (default %(default)s)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--workdir", metavar="DIR", help="work here (default: a temporary folder, removed)")
    ap.add_argument("--baseline", metavar="CHECKOUT", help="also run the generator of this checkout (e.g. "
                    "`git archive main | tar -x -C DIR`), side by side")
    ap.add_argument("--baseline-name", default="main", help="its name in the table (default %(default)s)")
    ap.add_argument("--report", metavar="JSON", help="print the table of a run's --json file and exit")
    args = ap.parse_args(argv)
    if args.report:
        with open(args.report) as f:
            saved = json.load(f)
        res = {side: {int(k): r for k, r in by_k.items()} for side, by_k in saved["results"].items()}
        print(table(res["ours"])[0] + "\n".join(baseline_rows(res)))
        start, end = saved["machine_start"]["loadavg"][0], saved["machine_end"]["loadavg"][0]
        print(f"load average: {start:.2f} at the start, {end:.2f} at the end ({saved['command']})")
        return 0
    ks = sorted(int(k) for k in args.ks.split(","))
    work = args.workdir or tempfile.mkdtemp(prefix="bench_growth_")
    start = machine()
    print(f"work folder {work}; load average {start['loadavg'][0]:.2f}", flush=True)
    try:
        sides = {"ours": REPO} | ({args.baseline_name: args.baseline} if args.baseline else {})
        for checkout in sides.values():  # byte-compile each generator once, outside the timed runs
            subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(checkout, "codegen")],
                           env=child_env(), check=True)
        res, problems = measure(work, ks, args.repeat, sides, log=lambda m: print(m, flush=True))
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    text, targets = table(res["ours"])
    print("\n" + text + "\n".join(baseline_rows(res)))
    end = machine()
    print(f"load average: {start['loadavg'][0]:.2f} at the start, {end['loadavg'][0]:.2f} at the end")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": res, "targets": targets, "problems": problems, "machine_start": start,
                       "machine_end": end, "command": "python benchmarks/bench_growth.py " +
                       " ".join(argv if argv is not None else sys.argv[1:])}, f, indent=1)
    for p in problems:
        print(f"bench_growth: count check failed: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
