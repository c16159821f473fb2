"""Two extensions loaded into one process never mix up their backward.

`aa::twice` (grad * 2) and `bb::twice` (grad * 3), built with the real
compiler (tests/support/twin_extensions.py).  With the default namespace each
library's classes live in `<op namespace>::autograd`, and their gradients
are right eagerly and under compiled autograd (which binds each Function's
backward process-wide), in either load order.  With one shared explicit
namespace the second load fails with one clear error naming the class and
both libraries, and the refused library's backward raises instead of
computing anything.  torch.compile's cache key tag holds each loaded
library's digest once, whatever the load order.  Each load runs in a fresh
Python process."""

import json
import os
import re
import subprocess
import sys

import pytest

from support import twin_extensions

pytestmark = pytest.mark.compile

FACTOR = {"aa": 2.0, "bb": 3.0}

# argv: library paths in load order.  Loads each (recording why one fails),
# then takes the gradient of sum(ns.twice(x)) for aa, bb, aa, bb, eagerly and
# under compiled autograd; prints {"loads": [...], "grads": [[ns, mode, grad or error]]}.
_RUN = r"""
import json, sys, torch
from torch._dynamo import compiled_autograd
loads = []
for path in sys.argv[1:]:
    try:
        torch.ops.load_library(path)
        loads.append(None)
    except OSError as e:
        chain = []
        while e is not None:
            chain.append(f"{type(e).__name__}: {e}")
            e = e.__cause__
        loads.append(chain)
grads = []
for ns in ("aa", "bb", "aa", "bb"):
    for mode in ("eager", "compiled"):
        x = torch.ones(3, requires_grad=True)
        try:
            loss = getattr(torch.ops, ns).twice(x).sum()
            if mode == "compiled":
                with compiled_autograd._enable(torch.compile(backend="eager")):
                    loss.backward()
            else:
                loss.backward()
            grads.append([ns, mode, x.grad.tolist()])
        except RuntimeError as e:
            grads.append([ns, mode, str(e).splitlines()[0]])
print(json.dumps({"loads": loads, "grads": grads}))
"""
# argv: library paths in load order; prints torch.compile's cache key tag after loading them.
_TAG = r"""
import json, sys, torch
for path in sys.argv[1:]:
    torch.ops.load_library(path)
print(json.dumps({"tag": torch.compiler.config.cache_key_tag}))
"""


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return twin_extensions.build(str(tmp_path_factory.mktemp("twins")))


def run(*paths, tag=None, script=_RUN):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_COMPILE_CACHE_KEY_TAG"}
    if tag is not None:   # the user's own tag for torch.compile's caches
        env["TORCH_COMPILE_CACHE_KEY_TAG"] = tag
    proc = subprocess.run([sys.executable, "-c", script, *paths], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_default_namespace_is_the_op_namespace(libs):
    for ns in ("aa", "bb"):
        gen = os.path.join(os.path.dirname(libs[ns, "default"]), "gen_twice_default", "functions")
        with open(os.path.join(gen, "TwiceBackward0.h")) as f:
            assert f"namespace {ns}::autograd {{" in f.read()
        symbols = subprocess.run(["nm", "-DC", "--defined-only", libs[ns, "default"]],
                                 capture_output=True, text=True).stdout
        assert f"{ns}::autograd::TwiceBackward0::apply(" in symbols


@pytest.mark.parametrize("order", [("aa", "bb"), ("bb", "aa")])
def test_default_namespaces_keep_each_extensions_gradient(libs, order):
    result = run(*(libs[ns, "default"] for ns in order))
    assert result["loads"] == [None, None]
    assert len(result["grads"]) == 8
    for ns, mode, grad in result["grads"]:
        assert grad == [FACTOR[ns]] * 3, (ns, mode, grad)


def test_torch_compiles_cache_key_tag_names_the_libraries_loaded_in_any_order(libs):
    # Each library adds the digest of its generated code (codegen/emit/cache_key.py)
    # after the user's own tag, once, sorted: a tag of the set of libraries loaded.
    aa, bb = libs["aa", "default"], libs["bb", "default"]
    alone = run(aa, script=_TAG)["tag"]
    assert re.fullmatch(r"autograd_functions:[0-9a-f]{32}", alone), alone
    both = run(aa, bb, tag="mine", script=_TAG)["tag"]
    assert run(bb, aa, tag="mine", script=_TAG)["tag"] == both
    words = both.split(" ")
    assert words[0] == "mine" and alone in words[1:] and words[1:] == sorted(set(words[1:])) and len(words) == 3
    assert run(bb, tag="mine", script=_TAG)["tag"] == f"mine {(set(words[1:]) - {alone}).pop()}"


def test_a_shared_explicit_namespace_refuses_the_second_library(libs):
    first, second = libs["aa", "shared"], libs["bb", "shared"]
    result = run(first, second)
    assert result["loads"][0] is None
    chain = result["loads"][1]
    assert chain[0] == f"OSError: Could not load this library: {second}"
    why = chain[-1]
    assert why.startswith(f"ImportError: autograd_functions: refusing to load {second}: its autograd "
                          f"Function shared::autograd::TwiceBackward0 is already defined by {first}, "
                          "loaded before it;"), chain
    assert "\n" not in why
    for ns, mode, grad in result["grads"]:
        if ns == "aa":
            assert grad == [2.0] * 3, (mode, grad)
        else:  # never the other library's gradient: the refused one raises its refusal
            assert isinstance(grad, str) and f"refusing to load {second}" in grad, (mode, grad)


# A C++ program, no Python: loads the libraries given (dlopen, RTLD_LOCAL, as
# torch.ops.load_library does), then takes d sum(ns::twice(x)) / dx for aa
# and bb through the dispatcher, printing "<ns> <grad>" or "<ns> error: <why>".
_HOST = r"""
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/variable.h>
#include <dlfcn.h>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
      std::fprintf(stderr, "dlopen: %s\n", dlerror());
      return 2;
    }
  }
  for (const char* ns : {"aa", "bb"}) {
    auto op = c10::Dispatcher::singleton()
                  .findSchemaOrThrow((std::string(ns) + "::twice").c_str(), "")
                  .typed<at::Tensor(const at::Tensor&)>();
    auto x = torch::autograd::make_variable(at::ones({3}), /*requires_grad=*/true);
    try {
      auto grads = torch::autograd::grad({op.call(x).sum()}, {x});
      std::printf("%s %g\n", ns, grads[0][0].item<double>());
    } catch (const c10::Error& e) {
      std::printf("%s error: %s\n", ns, e.what_without_backtrace());
    }
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def cpp_host(tmp_path_factory):
    """(the host program, the twins built without Python bindings: PYTHON=0)."""
    from torch.utils import cpp_extension
    root = tmp_path_factory.mktemp("cpp-host")
    libs = twin_extensions.build(str(root), "PYTHON=0")
    src, exe = root / "host.cpp", root / "host"
    src.write_text(_HOST)
    incs = [f"-I{d}" for d in cpp_extension.include_paths()]
    libdir = cpp_extension.library_paths()[0]
    subprocess.run(["g++", "-std=c++20", "-O0", *incs, str(src), "-o", str(exe), f"-L{libdir}",
                    f"-Wl,-rpath,{libdir}", "-ltorch", "-ltorch_cpu", "-lc10"], check=True)
    return str(exe), libs


def test_without_python_the_refusal_is_one_line_on_stderr_and_the_refused_backward_raises(cpp_host):
    exe, libs = cpp_host
    first, second = libs["aa", "shared"], libs["bb", "shared"]
    proc = subprocess.run([exe, first, second], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        f"autograd_functions: refusing to load {second}: its autograd Function "
        f"shared::autograd::TwiceBackward0 is already defined by {first}, loaded before it;"), proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == "aa 2"
    assert out[1].startswith("bb error: ") and f"refusing to load {second}" in out[1], out   # never aa's 2
    # the default namespaces do not clash: each library's own gradient, and stderr stays empty
    proc = subprocess.run([exe, libs["aa", "default"], libs["bb", "default"]], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr.strip() == "", proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["aa 2", "bb 3"]
