"""`patch-torch` and `run-patched` as a PyTorch developer runs them, with the
real compiler (compile tier): an edited formula in a copy of torch's own
derivatives.yaml runs in the installed torch, one TU per edit; what cannot
be patched is refused in one line, leaving no library; a patch loaded too
late says so."""

import os
import shutil
import subprocess
import sys

import pytest

from support.patch_helpers import compiled, edited_specs, environ, leftovers, patch_torch, run_patched

pytestmark = [pytest.mark.compile,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="patching libtorch needs ELF (Linux)")]

SIN = ("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n",
       "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj() * 3\n")
COS = ("- name: cos(Tensor self) -> Tensor\n  self: grad * -self.sin().conj()\n",
       "- name: cos(Tensor self) -> Tensor\n  self: grad * -self.sin().conj() * 5\n")
ANGLE = ("  self: angle_backward(grad, self)\n", "  self: angle_backward(grad, self) * 2\n")
ANGLE_GRAD = ("import torch\nx = torch.randn(4, dtype=torch.complex128, requires_grad=True, "
              "generator=torch.Generator().manual_seed(0))\n"
              "print(torch.view_as_real(torch.autograd.grad(torch.angle(x).sum(), x)[0]).flatten().tolist())")
# The ratio of each op's gradient to its true one, and what the process says is patched.
RATIOS = """
import torch, autograd_scons
x = torch.rand(6, dtype=torch.float64, requires_grad=True) + 0.5
ratios = []
for op, true in ((torch.sin, torch.cos), (torch.cos, lambda t: -torch.sin(t))):
    g, = torch.autograd.grad(op(x).sum(), x)
    ratios.append(round((g / true(x.detach())).mean().item(), 9))
print(ratios, sorted(autograd_scons.patched_functions()))
"""


def _build(tmp):
    """A patch folder built from torch's unedited specs, and its environment."""
    env = environ(tmp)
    proc = patch_torch(env, tmp / "patch")
    assert proc.returncode == 0, proc.stderr
    assert ": 0 Functions (none edited)" in proc.stdout
    return tmp / "patch", env, tmp


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """One such folder, never changed: the tests start from copies of it
    (each build of one compiles two TUs on torch's headers)."""
    return _build(tmp_path_factory.mktemp("pristine"))[0]


@pytest.fixture
def built(pristine, tmp_path):
    """A copy of the pristine folder in tmp_path, its environment, tmp_path."""
    shutil.copytree(pristine, tmp_path / "patch", symlinks=True)
    return tmp_path / "patch", environ(tmp_path), tmp_path


@pytest.fixture(scope="module")
def folder(pristine, tmp_path_factory):
    """One copy for the tests that do not count what compiles, shared."""
    tmp = tmp_path_factory.mktemp("patch")
    shutil.copytree(pristine, tmp / "patch", symlinks=True)
    return tmp / "patch", environ(tmp), tmp


def test_one_edit_compiles_one_tu_and_runs_in_the_installed_torch(built):
    out, env, tmp = built
    proc = patch_torch(env, out, "--derivatives", edited_specs(tmp, SIN))
    assert proc.returncode == 0, proc.stderr
    assert compiled(proc) == 1, proc.stdout
    assert "2 Functions (2 edited: SinBackward0, ForeachSinBackward0)" in proc.stdout
    run = run_patched(env, out, RATIOS)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[0] == "[3.0, 1.0] ['ForeachSinBackward0', 'SinBackward0']"
    # the same program without the patch: torch's own formula, and nothing patched
    plain = subprocess.run([sys.executable, "-c", RATIOS], capture_output=True, text=True, env=env)
    assert plain.stdout.split("\n")[0] == "[1.0, 1.0] []", plain.stderr

    # a second edit in the same folder, the first kept
    proc = patch_torch(env, out, "--derivatives", edited_specs(tmp, SIN, COS))
    assert proc.returncode == 0, proc.stderr
    assert compiled(proc) == 1, proc.stdout
    run = run_patched(env, out, RATIOS)
    assert run.stdout.split("\n")[0] == ("[3.0, 5.0] ['CosBackward0', 'ForeachCosBackward0', "
                                         "'ForeachSinBackward0', 'SinBackward0']"), run.stderr
    # unchanged: no compiler, no SCons
    again = patch_torch(env, out, "--derivatives", edited_specs(tmp, SIN, COS))
    assert again.returncode == 0 and compiled(again) == 0 and "up to date" in again.stdout


def refused(folder, *edits, args=()):
    out, env, tmp = folder
    proc = patch_torch(env, out, "--derivatives", edited_specs(tmp, *edits), *args)
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert leftovers(out) == []
    with open(os.path.join(out, "build.log")) as f:   # refused before anything compiled
        assert [x for x in f.read().splitlines()[1:] if " -c " in x] == []
    return lines[0]


def test_an_edit_using_a_helper_libtorch_keeps_local_runs_libtorchs_own(built):
    out, env, tmp = built
    proc = patch_torch(env, out, "--derivatives", edited_specs(tmp, ANGLE))
    assert proc.returncode == 0, proc.stderr
    assert compiled(proc) == 2, proc.stdout   # the edit's TU, and the one reaching angle_backward
    with open(out / "locals" / "libtorch_locals.cpp") as f:
        text = f.read()
    assert "// torch::autograd::generated::details::angle_backward\n" in text
    run = run_patched(env, out, ANGLE_GRAD)
    assert run.returncode == 0, run.stderr
    plain = subprocess.run([sys.executable, "-c", ANGLE_GRAD], capture_output=True, text=True, env=env)
    assert plain.returncode == 0, plain.stderr
    # libtorch's helper, called from the patch, times the edit's factor
    assert [2 * v for v in eval(plain.stdout)] == eval(run.stdout) != [0.0] * 4


def test_an_edit_using_a_helper_libtorch_has_no_symbol_for_is_refused(folder):
    # (FunctionsManual.h declares solve_backward_self; libtorch_cpu.so defines no such symbol)
    line = refused(folder, ("  self: angle_backward(grad, self)\n", "  self: solve_backward_self(grad, self, self)\n"))
    assert "'AngleBackward0' uses solve_backward_self, which libtorch defines with no symbol a patch can reach: " \
           "libtorch_cpu.so has no symbol for it" in line and "--functions-manual" in line
    # run-patched has nothing to run with: the last build was refused
    run = run_patched(folder[1], folder[0], "print(1)")
    assert run.returncode != 0 and "holds no patch" in run.stderr


# An edit that changes what a Function saves, and a new entry, were refused
# here before the patch had kernels of its own: each now gets the patch's own
# class and kernels, proven on OpInfo samples in test_patch_kernels.py
# (test_sin_saving_its_result, test_a_new_entry_for_an_op_without_one); an
# edit whose op cannot get a kernel is still refused at its entry
# (test_patch_selection.py).


def test_functions_manual_compiles_the_helpers_into_the_patch(tmp_path):
    out, env, tmp = tmp_path / "patch", environ(tmp_path), tmp_path
    manual = tmp / "FunctionsManual.cpp"
    # (a stand-in for torch's own file: defines the one helper the edit calls, recognisably)
    manual.write_text('#include <torch/csrc/autograd/FunctionsManual.h>\n'
                      'namespace torch::autograd::generated::details {\n'
                      'at::Tensor angle_backward(const at::Tensor& grad, const at::Tensor& self) {\n'
                      '  return at::full_like(self, 7.0);\n}\n}\n')
    proc = patch_torch(env, out, "--derivatives",
                       edited_specs(tmp, ("  self: angle_backward(grad, self)\n",
                                          "  self: angle_backward(grad, self) * 2\n")),
                       "--functions-manual", manual)
    assert proc.returncode == 0, proc.stderr
    run = run_patched(env, out, "import torch\nx = torch.randn(4, dtype=torch.float64, requires_grad=True)\n"
                                "print(torch.autograd.grad(torch.angle(x).sum(), x)[0].tolist())")
    assert run.stdout.strip() == "[14.0, 14.0, 14.0, 14.0]", run.stderr


def test_a_folder_built_for_another_torch_is_refused(built):
    out, env, _ = built
    record = out / "torch.json"
    record.write_text(record.read_text().replace('"version": "', '"version": "0.1-'))
    for proc in (patch_torch(env, out), run_patched(env, out, "print(1)")):
        assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "torch 0.1-" in proc.stderr and "not for th" in proc.stderr


def test_patched_functions_sees_a_patch_in_effect_and_reports_one_loaded_too_late(folder):
    out, env, tmp = folder
    proc = patch_torch(env, out, "--derivatives", edited_specs(tmp, SIN))
    assert proc.returncode == 0, proc.stderr
    late = ("import ctypes, sys, torch, autograd_scons\n"
            f"ctypes.CDLL({str(out / 'libautograd_torch_patch.so')!r})\n"
            "try:\n    autograd_scons.patched_functions()\nexcept autograd_scons.PatchNotInEffect as e:\n"
            "    print('raised:', e)\n")
    run = subprocess.run([sys.executable, "-c", late], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    [warning] = run.stderr.strip().splitlines()
    assert "is loaded but not in effect" in warning and "run-patched" in warning
    assert run.stdout.startswith("raised: a patch of libtorch's Functions is loaded but not in effect for 2 ")


def test_a_torch_binding_its_functions_to_itself_or_no_elf_is_refused(tmp_path, monkeypatch):
    from autograd_scons.buildenv import torch_flags
    from autograd_scons.torch_patch import build
    from autograd_scons.torch_patch.identity import PatchError
    # a torch whose libtorch_cpu.so is linked with -Bsymbolic
    root = tmp_path / "torch"
    (root / "lib").mkdir(parents=True)
    (root / "version.py").write_text("__version__ = '2.13.0+fake'\n")
    src = tmp_path / "lib.cpp"
    src.write_text("int torch_answer() { return 42; }\n")
    subprocess.run(["g++", "-fPIC", "-shared", "-Wl,-Bsymbolic", str(src), "-o", str(root / "lib" / "libtorch_cpu.so")],
                   check=True)
    monkeypatch.setattr(torch_flags, "_torch_dir", lambda: str(root))
    with pytest.raises(PatchError, match=r"libtorch_cpu.so is linked with -Bsymbolic: .* no other library can"):
        build.patch_torch(tmp_path / "out")
    assert leftovers(tmp_path / "out") == []
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(PatchError, match="needs ELF symbol interposition .* not available on darwin"):
        build.patch_torch(tmp_path / "out2")
    assert not os.path.exists(tmp_path / "out2")


def test_a_killed_patch_build_leaves_no_patch_and_the_next_one_right(built):
    import signal
    out, env, tmp = built
    specs = edited_specs(tmp, SIN)
    proc = subprocess.Popen([sys.executable, "-m", "autograd_scons", "patch-torch", "-o", str(out), "--derivatives",
                             specs], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    for line in proc.stdout:   # killed as the compile starts
        if "compiling with" in line:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    assert leftovers(out) == []   # no patch to run with while the build is unfinished
    again = patch_torch(env, out, "--derivatives", specs)
    assert again.returncode == 0, again.stderr
    run = run_patched(env, out, RATIOS)
    assert run.stdout.split("\n")[0] == "[3.0, 1.0] ['ForeachSinBackward0', 'SinBackward0']", run.stderr


def test_a_compile_error_in_an_edit_is_shown_at_the_yaml_line_first(built):
    """The issue-60 case: sin's formula calling a helper no header declares
    for those arguments (torch 2.13 declares only handle_r_to_c(ScalarType,
    Tensor)).  The first error shown was in the derived ForeachSinBackward0's
    generated code; the derived formula now carries sin's #line too."""
    out, env, tmp = built
    edit = (SIN[0], "- name: sin(Tensor self) -> Tensor\n  self: grad * handle_r_to_c(self, self.cos().conj())\n")
    path = edited_specs(tmp, edit)
    with open(path, encoding="utf-8") as f:
        line = f.read().split(edit[1])[0].count("\n") + 2   # the formula's line
    proc = patch_torch(env, out, "--derivatives", path)
    assert proc.returncode != 0, proc.stdout
    with open(os.path.join(out, "build.log")) as f:
        errors = [x.removeprefix("patch-torch: ") for x in (proc.stderr + f.read()).splitlines() if ": error:" in x]
    assert errors, proc.stderr[-3000:]
    assert errors[0].startswith(f"derivatives.yaml:{line}:"), "\n".join(errors[:5])
    assert all(e.startswith(f"derivatives.yaml:{line}:") for e in errors if "handle_r_to_c" in e), \
        "\n".join(errors[:10])
