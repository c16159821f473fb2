"""load() never loads a library that its own sources did not produce, with
the real compiler (issue 34): each process calls the fingerprint op, whose
kernel returns the constant written in its source (support/fingerprints.py).
The same scenarios with the stand-in compiler, and many more, are in
tests/jit/test_load_trust.py and tests/jit/test_load_random.py, on every
commit; this one runs in one commit's CI in three (tests/support/proof_share.py)."""

import pytest

from support import proof_share
from support.fingerprints import THEN_REAL, fp_call, loaded_value, run
from support.load_helpers import real_compiler


def computes(call):
    return loaded_value(run(call, real_compiler(), then=THEN_REAL, timeout=900).stdout)


@pytest.mark.compile
@proof_share.in_turn(0, "the real compiler's reproduction")
def test_one_extension_in_two_folders_computes_what_each_source_says(tmp_path):
    """The issue's reproduction: gb computes 1, ga 5, then gb 5 (which
    loaded gb's first library when every load() shared one database)."""
    ga, gb = tmp_path / "ga", tmp_path / "gb"
    assert computes(fp_call("fpx", gb, 1)) == "1"
    assert computes(fp_call("fpx", ga, 5)) == "5"
    assert computes(fp_call("fpx", gb, 5)) == "5"
