"""Which share of a long proof this run covers: the OpInfo differentials
over every op (tests/torch_patch/test_patch_opinfo.py, under torch 2.13
and, in the cuda tier, 2.14.1) run one of PARTS interleaved parts of the
op list per CI run, chosen from the commit, so that successive commits
cover every op; the whole proof stays one command (docs/testing.md).

    AGF_PROOF_SHARE=all    every op, under each torch (the documented command)
    AGF_PROOF_SHARE=K/N    part K of N, under each torch
    (unset)                part h % PARTS of PARTS, h being HEAD's hash, and the
                           patch's proof under one torch, TORCHES[h // PARTS % 2]
                           (each of the six pairs comes round; the other torch's
                           test skips, saying so); in a checkout without git:
                           every op, under each torch

The heaviest environment modules take turns among themselves (`in_turn`):
each runs in one of TURNS commits' CI, chosen from the commit as well
(h // (PARTS * 2) % TURNS, apart from the share and the torch), while a
lighter test of the same thing runs on every commit (docs/testing.md).
`takes_turns` ties a test to the torch of the patch's proof instead.
"""

from __future__ import annotations

import functools
import os
import subprocess

from support.spec_facts import REPO

PARTS = 3
# The heaviest environment modules' groups: each commit's CI runs one.
TURNS = 3
# The torch versions the patch's OpInfo proof runs under (the test module
# directly, and the cuda tier's venv).
TORCHES = ("2.13", "2.14")


@functools.cache
def _head(repo: str):
    # (once per process: every module's marks ask, at collection)
    head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True)
    return int(head.stdout.strip()[:12], 16) if head.returncode == 0 else None


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
    h = _head(repo)
    return (0, 1) if h is None else (h % PARTS, PARTS)


def torches(environ=os.environ, repo: str = REPO) -> tuple[str, ...]:
    """The torch versions ("2.13", "2.14") whose patch proof this run makes."""
    h = None if environ.get("AGF_PROOF_SHARE") else _head(repo)
    return TORCHES if h is None else (TORCHES[h // PARTS % 2],)


def turn(environ=os.environ, repo: str = REPO):
    """Which group of the heaviest environment modules this run makes
    (0 <= turn < TURNS), or None for all of them: AGF_PROOF_SHARE set (any
    value), or a checkout without git."""
    h = None if environ.get("AGF_PROOF_SHARE") else _head(repo)
    return None if h is None else h // (PARTS * len(TORCHES)) % TURNS


def as_environ(environ=os.environ, repo: str = REPO) -> str:
    """AGF_PROOF_SHARE's value for a child that runs in a copy without git
    (the cuda tier's clone): this run's share."""
    k, n = share(environ, repo)
    return "all" if n == 1 else f"{k}/{n}"


def describe(k: int, n: int) -> str:
    return "every op" if n == 1 else f"share {k}/{n} of the ops (AGF_PROOF_SHARE=all for every op)"


def takes_turns(torch: str, what: str):
    """A pytest mark: the test or module runs when this commit's share puts
    the patch's proof under `torch` ("2.13" or "2.14"), and skips, saying
    so, otherwise: how CI's heaviest environment modules keep its time
    (docs/testing.md).  AGF_PROOF_SHARE (any value) and a checkout without
    git run it."""
    import pytest
    return pytest.mark.skipif(torch not in torches(), reason=skip_reason(torch, what))


def in_turn(k: int, what: str):
    """A pytest mark: the test or module runs in the CI of the commits whose
    turn is k, in one of TURNS, and skips, saying so, in the others; how CI
    keeps its time with every heavy environment module (docs/testing.md).
    AGF_PROOF_SHARE (any value) and a checkout without git run it."""
    import pytest
    assert 0 <= k < TURNS, k
    now = turn()
    return pytest.mark.skipif(now is not None and now != k, reason=(
        f"{what}: runs in the CI of one commit in {TURNS} (turn {k}), this one's turn is {now} "
        f"(tests/support/proof_share.py); AGF_PROOF_SHARE=all runs it"))


def skip_reason(torch: str, what: str) -> str:
    return (f"{what}: runs in the CI of the commits whose share of the long proofs puts the patch's proof "
            f"under torch {torch}, this one's under {' and '.join(torches())} (tests/support/proof_share.py); "
            f"AGF_PROOF_SHARE=all runs it")
