"""Where the session's tmp_path folders go (support/basetemp.py): a tmpfs
made as /tmp is, with room, and otherwise wherever pytest puts them."""

from __future__ import annotations

import os

import pytest

from support import basetemp


def test_the_basetemp_goes_to_a_shared_tmpfs_only_with_room_for_it(tmp_path):
    assert not basetemp.tmpfs_with_room(str(tmp_path), 0)   # not a mount point
    if basetemp.tmpfs_with_room(basetemp.SHM, 0):   # (a machine without /dev/shm has no case to check)
        assert not basetemp.tmpfs_with_room(basetemp.SHM, 1 << 60)
    assert not basetemp.tmpfs_with_room("/proc", 0)   # mounted, not a tmpfs


def test_a_run_that_chose_the_tmpfs_has_its_tmp_path_there(tmp_path, request):
    if os.environ.get("PYTEST_DEBUG_TEMPROOT") != basetemp.SHM or os.environ.get("PYTEST_XDIST_WORKER") is None \
            and request.config.option.basetemp:
        pytest.skip("this run's temporary root was given (PYTEST_DEBUG_TEMPROOT, --basetemp) or /dev/shm lacked "
                    f"{basetemp.SHM_ROOM >> 30} GiB: pytest chose it, nothing of support/basetemp.py's to check")
    assert str(tmp_path).startswith(basetemp.SHM + os.sep)
