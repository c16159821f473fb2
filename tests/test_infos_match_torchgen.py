"""Our `python -m codegen infos` must reproduce torchgen's load_derivatives."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torchgen", reason="torch (torchgen) is the reference; not installed")

from torchgen_reference import compare_infos, real_spec_paths, reference_infos

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# 701 entries from derivatives.yaml (per schema x dispatch key) + 45
# synthesised {view}_copy infos, for the specs shipped with torch 2.13.0.
EXPECTED_COUNT = 746


def run_our_infos(native_functions, tags, derivatives):
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "infos",
         "--native-functions", native_functions,
         "--tags", tags,
         "--derivatives", derivatives],
        cwd=REPO,  # so `-m codegen` resolves to this checkout
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (
        f"python -m codegen infos exited {proc.returncode}\n"
        f"stderr:\n{proc.stderr[-4000:]}"
    )
    return json.loads(proc.stdout)


def test_infos_match_torchgen_on_real_specs():
    paths = real_spec_paths()
    ours = run_our_infos(*paths)
    ref = reference_infos(*paths)

    assert len(ref["infos"]) == EXPECTED_COUNT
    diffs = compare_infos(ours, ref, limit=20)
    assert diffs == [], "infos differ from torchgen (first 20):\n" + "\n".join(diffs)
    assert len(ours["infos"]) == EXPECTED_COUNT
