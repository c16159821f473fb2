"""The digest of the generated code (codegen/emit/cache_key.py), which a
library adds to torch.compile's cache keys when it loads: it changes
exactly when a generated file the library compiles from changes, whatever
the folder, the layout or the history.  (That the loaded library makes
torch.compile miss, and hit again, is tests/tool/test_compile_cache.py.)"""

import os
import re
import shutil

import pytest

from support import scenarios
from support.spec_facts import REPO
from autograd_scons.codegen.engine import incremental
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.codegen.engine.functions_request import Pch
from autograd_scons.codegen.tree import TUKind

TINY = EmitOptions(kernels=False)


def copy(src, dst):
    os.makedirs(dst)
    for name in ("native_functions.yaml", "derivatives.yaml"):
        shutil.copy(os.path.join(src, name), os.path.join(dst, name))
    return str(dst)


def generate(specs, out, opts=TINY, **kw):
    kw = {"jobs": scenarios.JOBS, "override": True, **kw}   # as the SCons tool's on Linux
    unity = kw.pop("unity", None)
    return incremental.update(str(out), FunctionsRequest(os.path.join(specs, "native_functions.yaml"),
                                                         os.path.join(specs, "derivatives.yaml"), None, opts, unity),
                              **kw)


def digest(out):
    with open(os.path.join(out, "cache_key.cpp")) as f:
        (found,) = re.findall(r'cache_digest\[\] = "([0-9a-f]{32})";', f.read())
    return found


@pytest.fixture
def tiny(tmp_path):
    specs = copy(scenarios.TINY, tmp_path / "specs")
    out = tmp_path / "gen"
    result = generate(specs, out)
    return specs, out, result


def test_the_digest_is_a_tu_of_its_own_that_takes_no_prelude(tiny, tmp_path):
    _, out, result = tiny
    assert [t for t in result.tus if t.kind is TUKind.CACHE_KEY] == [result.tus[-1]]
    assert result.tus[-1].path == "cache_key.cpp"
    with open(os.path.join(out, "cache_key.cpp")) as f:
        assert "#include" not in f.read()
    with open(os.path.join(out, "support.cpp")) as f:   # what adds it to the tag, once per library
        assert "extern const char cache_digest[];" in f.read()
    again = generate(copy(scenarios.TINY, tmp_path / "same"), tmp_path / "unity0", unity=0)
    assert again.tus[-1].kind is TUKind.CACHE_KEY and TUKind.SUPPORT in {t.kind for t in again.tus}
    assert not any(p.takes_prelude(TUKind.CACHE_KEY, cold_tus=99) for p in Pch)


def test_the_digest_follows_the_generated_code_and_nothing_else(tiny, tmp_path):
    specs, out, _ = tiny
    cold = digest(out)
    stamp = os.stat(os.path.join(out, "cache_key.cpp")).st_mtime_ns
    for name in ("comment", "native only"):   # no generated text changes
        scenarios.BY_NAME[name].apply(specs)
        generate(specs, out)
        assert digest(out) == cold, name
    assert os.stat(os.path.join(out, "cache_key.cpp")).st_mtime_ns == stamp   # not even rewritten
    scenarios.edit(os.path.join(specs, "derivatives.yaml"), *scenarios.FORMULA[1:])
    generate(specs, out)
    edited = digest(out)
    assert edited != cold
    scenarios.edit(os.path.join(specs, "derivatives.yaml"), *reversed(scenarios.FORMULA[1:]))
    generate(specs, out)
    assert digest(out) == cold   # the edit undone: the first build's code, its digest
    # the same specs in another folder, one TU per unit: the same code, the same digest
    other = tmp_path / "elsewhere"
    generate(specs, other / "gen", unity=0)
    assert digest(other / "gen") == cold


def test_an_op_kernels_registration_changes_the_digest(tmp_path):
    specs = copy(os.path.join(REPO, "specs"), tmp_path / "specs")
    out, opts = tmp_path / "gen", EmitOptions(includes=("myops/backward_helpers.h",))
    generate(specs, out, opts)
    cold = digest(out)
    # another kernel registered for scale: its op kernel's TU alone changes
    scenarios.edit(os.path.join(specs, "native_functions.yaml"), "CompositeExplicitAutograd: scale\n",
                   "CompositeExplicitAutograd: scale_twice\n")
    result = generate(specs, out, opts)
    assert result.regenerated == ["myops::scale"] and digest(out) != cold
