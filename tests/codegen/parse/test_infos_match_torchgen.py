"""Our `python -m autograd_scons infos` must reproduce torchgen's load_derivatives."""

import json
import subprocess
import sys

from support.spec_facts import REPO
from support.torchgen_reference import compare_infos, real_torchgen, to_json


def run_our_infos(native_functions, tags, derivatives):
    proc = subprocess.run(
        [sys.executable, "-m", "autograd_scons", "infos",
         "--native-functions", native_functions,
         "--tags", tags,
         "--derivatives", derivatives],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (
        f"python -m autograd_scons infos exited {proc.returncode}\n"
        f"stderr:\n{proc.stderr[-4000:]}"
    )
    return json.loads(proc.stdout)


def test_infos_match_torchgen_on_real_specs(torch_specs, torch_counts):
    ours = run_our_infos(*torch_specs)
    ref = to_json(*real_torchgen())  # what load_derivatives returned, before the foreach infos

    # one per derivatives entry and dispatch key, plus the synthesised {view}_copy infos
    assert len(ref["infos"]) == torch_counts.infos
    diffs = compare_infos(ours, ref, limit=20)
    assert diffs == [], "infos differ from torchgen (first 20):\n" + "\n".join(diffs)
    assert len(ours["infos"]) == torch_counts.infos
