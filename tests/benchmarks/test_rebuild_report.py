"""The rebuild benchmark's report module (benchmarks/rebuild_report.py): its
files, with and without matplotlib.  The benchmark itself is not run here."""

import json
import os
import sys

from support.spec_facts import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import rebuild_report  # noqa: E402

sys.path.pop(0)

RESULTS = {"scenarios": {}, "floor": {"header_parse_cpu_s": 10.0, "header_parse_wall_s": 10.0},
           "config": {"jobs": 2}, "command": "python benchmarks/bench_rebuild.py --quick"}


def test_without_matplotlib_the_chart_is_skipped_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    rebuild_report.write(RESULTS, str(tmp_path))
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    assert len(lines) == 1 and "chart skipped: matplotlib is not installed" in lines[0]
    assert out.err == ""
    assert json.load(open(tmp_path / "results.json"))["command"] == RESULTS["command"]
    assert "header parse" in (tmp_path / "results.md").read_text()
    assert not (tmp_path / "rebuild.png").exists()
