"""Generate the same trees at two commits and say which kinds of lines differ.

    python benchmarks/compare_generated.py [--base cfbf061] [--head WORKTREE] [--no-torch]

Each commit's generator is exported with `git archive` (the base) or used in
place (the head, default: this checkout) and run as `python -m autograd_scons generate`
(`python -m codegen generate` at a commit from before the one package)
on the example (specs/, in the layouts and options its builds use, and after
a formula edit, so that edit TUs and a shadowed unit are written), the test
fixtures, and torch's own specs. Every file of the two trees is compared line
by line; a differing line is classed as a banner line (`// @generated ...`), a
comment line (`//`, `/*`, ` *`, `#` in Python files), or code. The run exits 1
when a code line, a file only on one side, or a generator failure differs, so
"no behaviour change" is the exit status, and the table says what did change.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# The edit case: a copy of specs/ generated, this formula edited, generated again.
EDIT = ("self: grad * alpha\n", "self: grad * alpha * 2\n")


def _cases(torch: bool) -> list[tuple[str, list[str]]]:
    specs = lambda d: ["--native-functions", f"{d}/native_functions.yaml",  # noqa: E731
                       "--derivatives", f"{d}/derivatives.yaml"]
    ex = specs(os.path.join(REPO, "specs")) + ["--namespace", "myops::autograd",
                                                "--include", "myops/backward_helpers.h", "--jobs", "2"]
    cases = [
        ("example-auto", ex),
        ("example-unity0", ex + ["--unity", "0"]),
        ("example-unity3-override", ex + ["--unity", "3", "--override"]),
        ("example-no-python", ex + ["--no-python", "--unity", "0"]),
        ("example-edited-override", ex + ["--unity", "2", "--override", "--edit"]),
        ("tiny_ext", specs(os.path.join(REPO, "tests/fixtures/tiny_ext"))
         + ["--namespace", "myops::autograd", "--no-kernels", "--jobs", "2"]),
        ("nimpl_ext", specs(os.path.join(REPO, "tests/fixtures/nimpl_ext"))
         + ["--namespace", "nimpl::autograd", "--unity", "0"]),
        ("yaml_ref", specs(os.path.join(REPO, "tests/fixtures/yaml_ref"))
         + ["--include", "helpers.h", "--unity", "0"]),
    ]
    if torch:
        from autograd_scons.buildenv import torch_flags  # site_scons/: where torch's specs are
        nf, tags, d = torch_flags.torch_specs()
        # The bucket count fixed at the base's automatic 12: issue 27 changed the
        # automatic count on purpose (at most 96 units a bucket: 8 at -j2).
        cases.append(("torch-unity12", ["--native-functions", nf, "--tags", tags, "--derivatives", d,
                                        "--include", "torch/csrc/autograd/FunctionsManual.h", "--jobs", "2",
                                        "--unity", "12"]))
    return cases


def _generator(src: str) -> tuple[str, str]:
    """(module to run with -m, PYTHONPATH) of a checkout's generator: the
    package autograd_scons, site_scons/autograd_scons/; in a checkout from
    before that, site_scons/ itself (its package registered the checkout's
    codegen/ as autograd_scons.codegen), or, before the one package, the
    top-level codegen."""
    if os.path.isfile(os.path.join(src, "site_scons", "autograd_scons", "__main__.py")):
        return "autograd_scons", os.path.join(src, "site_scons")
    if not os.path.isfile(os.path.join(src, "site_scons", "__main__.py")):
        return "codegen", src
    path = os.path.join(tempfile.mkdtemp(prefix="compare-generated-"), "path")
    os.makedirs(path)
    os.symlink(os.path.join(src, "site_scons"), os.path.join(path, "autograd_scons"))
    return "autograd_scons", path


def _tracked_folder(commit: str, path: str) -> bool:
    """Whether `path` is a folder at `commit` (not absent, not a link)."""
    out = subprocess.run(["git", "-C", REPO, "ls-tree", commit, path], capture_output=True, text=True).stdout
    return out.split(" ", 1)[0] == "040000"


def _generate(src: str, out: str, args: list[str]) -> str:
    if "--edit" in args:
        # On a copy of the specs: generate, edit one formula, generate again.
        specs = out + "-specs"
        shutil.copytree(os.path.join(REPO, "specs"), specs)
        args = [a.replace(os.path.join(REPO, "specs"), specs) for a in args if a != "--edit"]
        err = _generate(src, out, args)
        path = os.path.join(specs, "derivatives.yaml")
        with open(path) as f:
            text = f.read()
        assert EDIT[0] in text, "the edit case's formula is not in specs/derivatives.yaml"
        with open(path, "w") as f:
            f.write(text.replace(EDIT[0], EDIT[1], 1))
        if err:
            return err
    module, path = _generator(src)
    r = subprocess.run([sys.executable, "-m", module, "generate", "--out", out, "-q", *args],
                       cwd=src, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path})
    return "" if r.returncode == 0 else (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]


def _kind(line: str, path: str) -> str:
    s = line.strip()
    if "@generated" in s:
        return "banner"
    if not s:
        return "blank"
    if s.startswith(("//", "/*", "*", "*/")) or (path.endswith(".py") and s.startswith("#")):
        return "comment"
    return "code"


def _files(root: str) -> dict[str, str]:
    found = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            found[os.path.relpath(p, root)] = p
    return found


def compare(a: str, b: str, kinds: collections.Counter, examples: dict) -> None:
    fa, fb = _files(a), _files(b)
    for rel in sorted(set(fa) | set(fb)):
        if rel not in fa or rel not in fb:
            kinds["file only in " + ("head" if rel in fb else "base")] += 1
            examples.setdefault("file only in " + ("head" if rel in fb else "base"), rel)
            continue
        if rel.endswith((".json", ".manifest")) or os.path.basename(rel).startswith("."):
            # The generator's own state (manifest, key): it holds the generator's version.
            with open(fa[rel], "rb") as x, open(fb[rel], "rb") as y:
                if x.read() != y.read():
                    kinds["generator state file"] += 1
            continue
        with open(fa[rel]) as x, open(fb[rel]) as y:
            la, lb = x.read().splitlines(), y.read().splitlines()
        if la == lb:
            continue
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
            if op == "equal":
                continue
            for line in la[i1:i2] + lb[j1:j2]:
                k = _kind(line, rel)
                kinds[k] += 1
                examples.setdefault(k, f"{rel}: {line.strip()[:100]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="cfbf061")
    ap.add_argument("--head", default=REPO, help="checkout whose generator is the new one")
    ap.add_argument("--no-torch", action="store_true", help="skip torch's own specs (~1 min)")
    args = ap.parse_args()
    bad = False
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        os.makedirs(base)
        # The one package (site_scons/, beside codegen/, or holding it) where the base has it.
        one = subprocess.run(["git", "-C", REPO, "cat-file", "-e", f"{args.base}:site_scons"]).returncode == 0
        tar = subprocess.run(["git", "-C", REPO, "archive", args.base] + (["site_scons"] if one else [])
                             + (["codegen"] if _tracked_folder(args.base, "codegen") else []),
                             check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", base], input=tar, check=True)
        print(f"base {args.base} vs head {args.head}")
        print(f"{'tree':28} {'files':>5}  differing lines by kind")
        for name, cargs in _cases(not args.no_torch):
            outs = []
            for side, src in (("base", base), ("head", args.head)):
                out = os.path.join(tmp, f"{name}-{side}")
                err = _generate(src, out, cargs)
                if err:
                    print(f"{name}: {side} failed: {err}")
                    bad = True
                outs.append(out)
            kinds: collections.Counter = collections.Counter()
            examples: dict = {}
            compare(*outs, kinds, examples)
            n = len(_files(outs[1]))
            said = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) or "identical"
            print(f"{name:28} {n:5}  {said}")
            for k, e in sorted(examples.items()):
                print(f"{'':36}e.g. {k}: {e}")
            bad |= any(k not in ("banner", "comment", "blank", "generator state file") for k in kinds)
    print("no code line differs" if not bad else "CODE DIFFERS (see above)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
