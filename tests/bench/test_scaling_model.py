"""The scaling benchmark's simulation (benchmarks/_scaling_model.py), on
costs whose answers can be worked out by hand: a local build on one core
is the sum of its parts, on two cores the parts spread; distcc on one
remote host alternates the client's preprocessing and the host's compile;
a host that shares the client's core halves both while they overlap; the
line fit.  The benchmark's measurements are not run here."""

import os
import sys

import pytest

from support.spec_facts import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import _scaling_model as model  # noqa: E402

TUS = [model.TU(f"t{i}", whole=20, pre=2, remote=18) for i in range(4)]


def test_a_local_build_is_its_parts_on_one_core_and_spread_on_two():
    one = model.Cluster({"cpu": 1}, "cpu", jobs=1)
    assert model.build_time(TUS, 5, 3, one) == pytest.approx(5 + 4 * 20 + 3)
    two = model.Cluster({"cpu": 2}, "cpu", jobs=2)
    assert model.build_time(TUS, 5, 3, two) == pytest.approx(5 + 2 * 20 + 3)
    # -j4 on 2 cores: the 4 compiles share them, the same total
    assert model.build_time(TUS, 5, 3, model.Cluster({"cpu": 2}, "cpu", jobs=4)) == pytest.approx(5 + 40 + 3)


def test_one_remote_host_alternates_preprocessing_and_compiling():
    # -j1: each TU's preprocessing (client), then its compile (host), one after the other
    h1 = model.Cluster({"c0": 1, "c1": 1}, "c0", [model.Host("c1", 1)], jobs=1)
    assert model.build_time(TUS, 5, 3, h1) == pytest.approx(5 + 4 * (2 + 18) + 3)
    # -j2: the next TU is preprocessed while the host compiles; after the first, only the host counts
    h1j2 = model.Cluster({"c0": 1, "c1": 1}, "c0", [model.Host("c1", 1)], jobs=2)
    assert model.build_time(TUS, 5, 3, h1j2) == pytest.approx(5 + 4 + 4 * 18 + 3)


def test_a_host_on_the_clients_core_shares_it():
    # one host, -j2: a TU is preprocessed while the one before compiles. On
    # a core of its own the host never waits for it; on the client's core
    # the two share it: 2 s more each time they overlap (twice), 88 s not 84.
    apart = model.Cluster({"c0": 1, "c1": 1}, "c0", [model.Host("c1", 1)], jobs=2)
    assert model.build_time(TUS, 5, 3, apart) == pytest.approx(5 + 4 + 4 * 18 + 3)
    shared = model.Cluster({"c0": 1}, "c0", [model.Host("c0", 1)], jobs=2)
    assert model.build_time(TUS, 5, 3, shared) == pytest.approx(5 + 4 + 4 * 18 + 2 * 2 + 3)


def test_the_line_through_the_measured_tus():
    a, b = model.fit_line([(1, 11.0), (11, 12.2), (89, 21.56)])
    assert a == pytest.approx(10.88, abs=0.01) and b == pytest.approx(0.12, abs=0.001)
