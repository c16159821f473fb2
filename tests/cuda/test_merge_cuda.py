"""From one project to one wheel for two torch versions (docs/shipping.md,
"Several torch versions in one wheel"), with g++ and nvcc: `new --cuda`
(its span `torch>=2.13,<2.15`, written once), its wheel built unedited
under this interpreter's torch 2.13 (CPU) and under the cuda tier's torch
2.14.1 (CUDA 13.0: its variant carries the `.cu` kernel), the two merged
(auditwheel's manylinux tag), then the merged wheel installed by pip into
a fresh venv seeing torch 2.13 and into one seeing torch 2.14.1: each
imports it from a far folder, loads its own variant (its mapped library),
and gradchecks the op on CPU tensors; under 2.14.1 the CUDA kernel is
registered (the dispatcher), and run on a GPU where one is visible.  pip
refuses the wheel beside a torch outside the span (offline, no index),
and packaging's specifiers say the same.  ~2 min of compiling on 2 cores."""

import os
import sys

import pytest
from packaging.specifiers import SpecifierSet

from support import proof_share, ship_helpers as ship
from test_cuda_tier import venv  # noqa: F401  (the tier's venv fixture: skips without it)

# (takes turns with tests/cuda/test_ship_cuda.py: each commit's CI builds one CUDA wheel)
pytestmark = [pytest.mark.cuda, pytest.mark.compile, proof_share.in_turn(2, "the merged CUDA wheel's module")]

NAME = "span_ops"
INFO = f"{NAME}-0.1.0.dist-info"


@pytest.fixture(scope="module")
def merged(venv, tmp_path_factory):  # noqa: F811
    """(tmp, PYTHONPATH, the merged wheel, the two variant wheels)."""
    tmp = tmp_path_factory.mktemp("merge-cuda")
    path = ship.this_checkout(tmp)
    ship.new(tmp, NAME, path, "--cuda")
    project = str(tmp / NAME)
    cpu, _ = ship.pip_wheel(project, str(tmp / "dist-2.13"), path, "-j=2")
    cuda, proc = ship.pip_wheel(project, str(tmp / "dist-2.14"), path, "TORCH_CUDA_ARCH_LIST=9.0", "-j=2",
                                python=venv)
    assert "autograd_scons: CUDA kernels for 9.0" in proc.stdout + proc.stderr
    os.makedirs(tmp / "merged")
    out = ship.run([sys.executable, "-m", "autograd_scons", "merge-wheels", "-o", tmp / "merged", cpu, cuda], tmp,
                   ship.environ(path)).stdout.split()
    return tmp, path, out[-1], (cpu, cuda)


def _fresh_venv(folder, python, env):
    """A venv at `folder` seeing the site-packages of `python` (its torch),
    without pip: pip is run for it by `--python`."""
    ship.run([python, "-m", "venv", "--without-pip", folder], os.path.dirname(str(folder)), env)
    outer = ship.run([python, "-c", "import site; print(repr(site.getsitepackages()))"], "/", env).stdout.strip()
    py = os.path.join(str(folder), "bin", "python")
    purelib = ship.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], "/", env).stdout
    with open(os.path.join(purelib.strip(), "_outer_site.pth"), "w") as f:
        # (map, not a comprehension: site executes the line with separate
        # globals and locals, and a comprehension's scope cannot see `site`)
        f.write(f"import site; list(map(site.addsitedir, {outer}))\n")
    return py


def _pip_install(py, wheel, cwd):
    # No --no-deps, and nothing to install from (no index, no find-links, no
    # pip configuration): pip must meet the requirement on torch with the
    # torch the venv sees, or refuse.
    return ship.run([sys.executable, "-m", "pip", "--python", py, "install", "--no-index", wheel], cwd,
                    ship.environ("", PIP_CONFIG_FILE=os.devnull), check=False)


CHECK = (f"import os, torch, {NAME}\n"
         f"assert {NAME}.__file__.startswith(os.path.realpath(os.environ['SITE'])), {NAME}.__file__\n"
         "loaded = sorted({line.split()[-1] for line in open('/proc/self/maps') if '/_C/torch' in line})\n"
         "print('LOADED', *[os.path.basename(p) for p in loaded])\n"
         "x = torch.randn(4, 3, dtype=torch.double, requires_grad=True)\n"
         f"assert torch.autograd.gradcheck(lambda t: {NAME}.ops.scaled_square(t, 0.75), (x,))\n"
         f"dump = torch._C._dispatch_dump('{NAME}::scaled_square')\n"
         "print('CUDA', any(line.startswith('CUDA: registered') for line in dump.splitlines()))\n"
         "if torch.cuda.is_available():\n"
         "    g = x.detach().cuda().requires_grad_(True)\n"
         f"    assert torch.autograd.gradcheck(lambda t: {NAME}.ops.scaled_square(t, 0.75), (g,))\n"
         "    print('GPU checked')\n")


def _installed_and_run(merged, python, folder):
    tmp, wheel = merged[0], merged[2]
    py = _fresh_venv(tmp / folder, python, ship.environ(""))
    proc = _pip_install(py, wheel, tmp)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    site = ship.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], "/",
                    ship.environ("")).stdout.strip()
    far = tmp / "far" / folder
    os.makedirs(far)
    return ship.run([py, "-c", CHECK], far, ship.environ("", SITE=site)).stdout.splitlines()


def test_the_merged_wheel_carries_both_variants_under_a_manylinux_tag_auditwheel_confirms(merged):
    tmp, _, wheel, _ = merged
    tag = os.path.basename(wheel)[:-len(".whl")].split("-")[-1]
    assert tag.startswith("manylinux_") and tag.endswith("_x86_64"), wheel
    names = ship.wheel_names(wheel)
    assert [n for n in names if n.endswith(".so")] == [f"{NAME}/_C/torch2.13_cpu.so", f"{NAME}/_C/torch2.14_cu130.so"]
    assert not [n for n in names if "libtorch" in n or "libc10" in n]  # torch's libraries are never bundled
    shown = ship.run([sys.executable, "-m", "auditwheel", "show", wheel], tmp, ship.environ("")).stdout
    assert f'This constrains the platform tag to "{tag}"' in " ".join(shown.split())
    import json
    report = json.loads(ship.run([sys.executable, "-m", "auditwheel", "show", "--json", wheel], tmp,
                                 ship.environ("")).stdout)
    assert report["sym_tag"] == tag  # its only other objection is torch's own libraries (not bundled)
    assert sorted(report["external_libs"]) == ["libc10.so", "libc10_cuda.so", "libcudart.so.13", "libtorch_cpu.so",
                                               "libtorch_python.so"]


def test_under_torch_2_13_it_loads_the_2_13_variant_and_gradchecks(merged):
    out = _installed_and_run(merged, sys.executable, "venv-2.13")
    assert out[0] == "LOADED torch2.13_cpu.so" and out[1] == "CUDA False", out


def test_under_torch_2_14_it_loads_the_cuda_variant_with_its_kernel_registered(merged, venv):  # noqa: F811
    out = _installed_and_run(merged, venv, "venv-2.14")
    assert out[:2] == ["LOADED torch2.14_cu130.so", "CUDA True"], out
    gpu = ship.run([venv, "-c", "import torch; print(torch.cuda.is_available())"], "/", ship.environ("")).stdout
    assert (out[2:] == ["GPU checked"]) == (gpu.strip() == "True"), out


def test_pip_refuses_it_beside_a_torch_outside_the_span(merged):
    tmp, wheel = merged[0], merged[2]
    [req] = [line.split(": ", 1)[1] for line in ship.wheel_read(wheel, f"{INFO}/METADATA").decode().splitlines()
             if line.startswith("Requires-Dist: torch")]
    spec = SpecifierSet(req[len("torch"):])
    assert [v for v in ("2.12.1", "2.13.0+cpu", "2.14.1+cu130", "2.15.0") if spec.contains(v)] == \
        ["2.13.0+cpu", "2.14.1+cu130"]
    for outside in ("2.12.1", "2.15.0"):  # a venv whose only torch is that version's metadata
        bare = tmp / f"bare-{outside}"
        ship.run([sys.executable, "-m", "venv", "--without-pip", bare], tmp, ship.environ(""))
        purelib = ship.run([str(bare / "bin" / "python"), "-c",
                            "import sysconfig; print(sysconfig.get_paths()['purelib'])"], "/",
                           ship.environ("")).stdout.strip()
        os.makedirs(os.path.join(purelib, f"torch-{outside}.dist-info"))
        with open(os.path.join(purelib, f"torch-{outside}.dist-info", "METADATA"), "w") as f:
            f.write(f"Metadata-Version: 2.1\nName: torch\nVersion: {outside}\n")
        proc = _pip_install(str(bare / "bin" / "python"), wheel, tmp)
        [line] = [x for x in proc.stderr.splitlines() if x.startswith("ERROR: No matching distribution found for")]
        assert proc.returncode != 0 and SpecifierSet(line.split(" for torch", 1)[1]) == spec, proc.stderr[-2000:]
        assert not os.path.exists(os.path.join(purelib, NAME))
