"""The share of the long proofs a CI run covers (support/proof_share.py):
chosen from the commit, and the whole proof on request."""

import pytest

from support.proof_share import PARTS, describe, share
from support.spec_facts import REPO


def test_the_share_is_asked_for_or_taken_from_the_commit(tmp_path):
    assert share({"AGF_PROOF_SHARE": "all"}) == (0, 1)
    assert share({"AGF_PROOF_SHARE": "2/5"}) == (2, 5)
    k, n = share({})
    assert n == PARTS and 0 <= k < n   # (this checkout's HEAD)
    assert share({}, repo=str(tmp_path)) == (0, 1)   # not a checkout: every op
    assert describe(0, 1) == "every op" and "AGF_PROOF_SHARE=all" in describe(1, 3)
    for bad in ("3/3", "x/2", "1"):
        with pytest.raises(ValueError, match="AGF_PROOF_SHARE"):
            share({"AGF_PROOF_SHARE": bad})



def test_the_patch_proof_runs_under_one_torch_a_commit_and_both_on_request(tmp_path):
    from support.proof_share import TORCHES, as_environ, torches
    assert torches({"AGF_PROOF_SHARE": "all"}) == TORCHES == torches({"AGF_PROOF_SHARE": "1/3"})
    assert len(torches({})) == 1 and torches({})[0] in TORCHES   # (this checkout's HEAD)
    assert torches({}, repo=str(tmp_path)) == TORCHES             # not a checkout: both
    k, n = share({})
    assert as_environ({}) == f"{k}/{n}" and as_environ({"AGF_PROOF_SHARE": "all"}) == "all"


def test_a_module_taking_turns_runs_with_its_torchs_proof_and_all_on_request(monkeypatch):
    from support.proof_share import TORCHES, takes_turns, torches
    monkeypatch.delenv("AGF_PROOF_SHARE", raising=False)
    [turn] = torches()   # (this checkout's HEAD)
    for torch in TORCHES:
        mark = takes_turns(torch, "this module")
        assert mark.args == (torch != turn,)
        assert f"under torch {torch}, this one's under {turn}" in mark.kwargs["reason"]
        assert "AGF_PROOF_SHARE=all runs it" in mark.kwargs["reason"]
    monkeypatch.setenv("AGF_PROOF_SHARE", "all")
    assert [takes_turns(torch, "this module").args for torch in TORCHES] == [(False,), (False,)]


def test_the_heavy_modules_run_in_one_turn_a_commit_and_all_on_request(monkeypatch, tmp_path):
    from support.proof_share import PARTS, TORCHES, TURNS, _head, in_turn, turn
    monkeypatch.delenv("AGF_PROOF_SHARE", raising=False)
    now = turn()   # (this checkout's HEAD)
    assert now == _head(REPO) // (PARTS * len(TORCHES)) % TURNS
    marks = [in_turn(k, "this module") for k in range(TURNS)]
    assert [m.args for m in marks] == [(k != now,) for k in range(TURNS)]   # exactly one turn runs
    assert f"this one's turn is {now}" in marks[0].kwargs["reason"]
    assert "AGF_PROOF_SHARE=all runs it" in marks[0].kwargs["reason"]
    assert turn({}, repo=str(tmp_path)) is None   # not a checkout: every turn
    monkeypatch.setenv("AGF_PROOF_SHARE", "all")
    assert turn() is None and [in_turn(k, "this module").args for k in range(TURNS)] == [(False,)] * TURNS
