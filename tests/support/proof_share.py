"""Which share of a long proof this run covers: the OpInfo differentials
over every op (tests/torch_patch/test_patch_opinfo.py, under torch 2.13
and, in the cuda tier, 2.14.1) run one of PARTS interleaved parts of the
op list per CI run, chosen from the commit, so that successive commits
cover every op; the whole proof stays one command (docs/testing.md).

    AGF_PROOF_SHARE=all    every op (the documented command)
    AGF_PROOF_SHARE=K/N    part K of N
    (unset)                part int(HEAD's hash) % PARTS of PARTS, in a git checkout;
                           every op outside one
"""

from __future__ import annotations

import os
import subprocess

from support.spec_facts import REPO

PARTS = 3


def share(environ=os.environ, repo: str = REPO) -> tuple[int, int]:
    """(k, n): this run covers the ops whose index is k modulo n."""
    asked = environ.get("AGF_PROOF_SHARE", "")
    if asked == "all":
        return 0, 1
    if asked:
        k, _, n = asked.partition("/")
        if not (k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
            raise ValueError(f"AGF_PROOF_SHARE={asked!r}: give 'all' or K/N with 0 <= K < N")
        return int(k), int(n)
    head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return 0, 1
    return int(head.stdout.strip()[:12], 16) % PARTS, PARTS


def describe(k: int, n: int) -> str:
    return "every op" if n == 1 else f"share {k}/{n} of the ops (AGF_PROOF_SHARE=all for every op)"
