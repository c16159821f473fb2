"""The scaling benchmark's simulation (benchmarks/_scaling_model.py), on
costs whose answers can be worked out by hand: a local build on one core
is the sum of its parts, on two cores the parts spread; distcc on one
remote host alternates the client's preprocessing and the host's compile;
a host that shares the client's core halves both while they overlap; the
line fit.  The benchmark's measurements are not run here."""

import json
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


def _tu(name, units, whole, pre, remote):
    return {"name": name, "units": units, "whole": whole, "pre": pre, "remote": remote}


def test_the_report_simulates_the_runs_with_every_tu_they_compiled(tmp_path, capsys):
    # the measured runs compile the cache key's digest beside the buckets and
    # bindings: the 1-host run (-j1) is the prefix, each TU's preprocessing then
    # compile, the link, the digest included
    import _scaling_report as report
    costs = {"prefix": 2.0, "prefix_edit": 1.0, "link": 0.5,
             "tus": {"8": [_tu("bucket_0.cpp", 90, 25, 1.5, 24), _tu("bucket_1.cpp", 80, 24, 1.5, 23),
                           _tu("bindings_0.cpp", 0, 20, 1, 20)],
                     "0": [_tu("AbsBackward0.cpp", 1, 12, 1, 11)]},
             "digest": _tu("cache_key.cpp", 0, 0.8, 0.1, 0.6),
             "torchgen": {**_tu("Functions.cpp", 711, 99, 1.4, 98), "generate": 3.0, "link": 0.3}}
    (tmp_path / "costs.json").write_text(json.dumps(costs))
    runs = {"1 host": {"ours": {"wall": 100.0, "load_before": [0.1], "load_after": [0.9]}}}
    (tmp_path / "runs.json").write_text(json.dumps(runs))
    pair = {"rounds": [{"cpus": ["1"], "wall": 27.8, "cpu": [27.8]},
                       {"cpus": ["0", "1"], "wall": 27.0, "cpu": [26.7, 26.4]}]}
    (tmp_path / "pair.json").write_text(json.dumps(pair))
    r = report.report(str(tmp_path), 711)
    one = next(c for c in r["checks"] if c["run"] == "1 host" and c["side"] == "ours")
    expected = 2.0 + (1.5 + 24) + (1.5 + 23) + (1 + 20) + (0.1 + 0.6) + 0.5
    assert one["predicted"] == pytest.approx(expected)
    assert one["error"] == pytest.approx((expected - 100.0) / 100.0)
    tg = next(c for c in r["checks"] if c["run"] == "1 host" and c["side"] == "torchgen")
    assert tg["predicted"] == pytest.approx(3.0 + 1.4 + 98 + 0.3) and tg["measured"] is None
    report.print_report(r)
    out = capsys.readouterr().out
    assert "| 1 host | ours | 100.0 |" in out and "| 2 hosts | ours | not run |" in out
    assert "alone on CPU 1 27.8 s wall" in out and "on CPUs 0 and 1 at once 27.0 s wall (CPU 26.7, 26.4 s)" in out
