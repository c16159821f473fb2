"""A wheel's variant: which torch its library was built for, by minor and
build (CPU, or the CUDA version), named as a merged wheel names the
library (`_C/torch2.13_cpu.so`, `_C/torch2.14_cu130.so`) and as the
package's loader (templates/project/extname/__init__.py) matches it
against the running torch.

A wheel built by the backend records it in its dist-info, in
`autograd_scons.json` (VARIANT_FILE), so merge-wheels (merge.py) names each
library without loading it or guessing from its links: a CUDA torch's
library without `.cu` sources links no CUDA library, yet is built against
that torch, not the CPU one.
"""

import json
import re

VARIANT_FILE = "autograd_scons.json"
# torch2.13_cpu, torch2.14_cu130: what the loader parses back
NAME = re.compile(r"torch(\d+)\.(\d+)_(cpu|cu(\d+))")


def variant_name(torch_version, cuda):
    """`torch2.14_cu130` of torch "2.14.1+cu130" with CUDA "13.0";
    `torch2.13_cpu` without CUDA."""
    from autograd_scons.ship.torch_span import minor
    major, mnr = minor(torch_version)
    build = "cpu" if not cuda else "cu" + "".join(cuda.split(".")[:2])
    return f"torch{major}.{mnr}_{build}"


def dist_info(info):
    """{VARIANT_FILE: text} of a wheel made from the build's wheel.json `info`."""
    record = {"variant": variant_name(info["torch"], info.get("torch_cuda")), "torch": info["torch"],
              "torch_cuda": info.get("torch_cuda"), "library": info["library"],
              "cuda_arches": list(info.get("cuda") or [])}
    return {VARIANT_FILE: json.dumps(record, sort_keys=True, indent=1) + "\n"}
