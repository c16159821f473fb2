"""Helpers for the CUDA tests (not a test module).

- `fake_cuda(root, tmp)`: a clone (scons_helpers.clone) whose torch facts
  say CUDA 13.0 and a stand-in nvcc (fakenvcc.py) as `$CUDA_HOME/bin/nvcc`:
  what the build decides and rebuilds, without a CUDA torch or compiling.
- `cuda_venv()`: the second virtual environment with a CUDA build of torch
  (torch==2.14.1) that the `cuda` tier builds and runs the example in, or a
  skip reason saying how to get one.
"""

import json
import os
import subprocess
import sys

from support.spec_facts import REPO

CUDA_TORCH = "2.14.1"
# Where .ci/run creates (or reuses) that environment; AGF_CUDA_VENV overrides.
DEFAULT_VENV = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                            "autograd-functions-scons", f"venv-torch{CUDA_TORCH}")
CUDA_FACTS = {"cuda": "13.0", "cuda_arches": ["sm_75", "sm_80", "sm_90"], "gpus": []}


def install_fake_nvcc(folder):
    """`folder/bin/nvcc`: fakenvcc.py run by this interpreter; returns folder (a CUDA_HOME)."""
    bindir = os.path.join(folder, "bin")
    os.makedirs(bindir, exist_ok=True)
    nvcc = os.path.join(bindir, "nvcc")
    with open(os.path.join(REPO, "tests", "support", "fakenvcc.py")) as f:
        text = f.read()
    with open(nvcc, "w") as f:
        f.write(f"#!{sys.executable}\n" + text)
    os.chmod(nvcc, 0o755)
    return str(folder)


def fake_cuda_facts(root, **facts):
    """Make the clone's cached torch facts (build/.torch.json) say a CUDA torch."""
    path = os.path.join(root, "build", ".torch.json")
    with open(path) as f:
        cached = json.load(f)
    cached["facts"].update(dict(CUDA_FACTS, **facts))
    with open(path, "w") as f:
        json.dump(cached, f)


def cuda_venv():
    """(python of the CUDA-torch venv, None) or (None, why not)."""
    folder = os.environ.get("AGF_CUDA_VENV") or DEFAULT_VENV
    python = os.path.join(folder, "bin", "python")
    how = (f"create it with `python -m venv {folder} && {folder}/bin/pip install torch=={CUDA_TORCH} scons "
           "pyyaml xxhash pytest numpy` (.ci/run does), or point AGF_CUDA_VENV at one")
    if not os.path.exists(python):
        return None, f"no venv with torch {CUDA_TORCH} at {folder}: {how}"
    out = subprocess.run([python, "-c", "import torch, SCons, yaml, xxhash, pytest; "
                          "print(torch.__version__, torch.version.cuda)"], capture_output=True, text=True)
    found = out.stdout.split()
    if out.returncode != 0 or not found or not found[0].startswith(CUDA_TORCH) or found[1] == "None":
        return None, (f"{python} lacks a CUDA build of torch {CUDA_TORCH} or scons/pyyaml/xxhash/pytest "
                      f"({(out.stdout + out.stderr).strip()[-200:]}): {how}")
    return python, None
