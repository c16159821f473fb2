"""The precompiled prelude's one policy (codegen/engine/functions_request.py, Pch): which TUs
take it, the same through `scons` (PCH=) as through load() (pch=,
tests/jit/test_load.py::test_the_prelude_is_precompiled_only_where_it_pays)."""

import os
import re

import pytest

from support.scons_helpers import FAKE_CXX, clone, compiled, edit, scons

from autograd_scons.codegen.engine.buckets import PCH_MIN_TUS, PCH_MIN_TUS_CLANG
from autograd_scons.codegen.engine.functions_request import FunctionsRequest, Pch
from autograd_scons.codegen.tree import TUKind

ARGS = ("-j2", f"CXX={FAKE_CXX}")
FORMULA = ("self: grad * alpha", "self: alpha * grad")   # scale's backward, in specs/derivatives.yaml


def with_prelude(out):
    """The objects compiled against the precompiled prelude in a build's output."""
    return sorted(os.path.basename(m.group(1)) for line in out.splitlines()
                  if (m := re.search(r"-o (\S+\.os) -c ", line)) and re.search(r"-Winvalid-pch -include |-include-pch ", line))


@pytest.mark.compile
def test_scons_pch_auto_is_loads_auto(tmp_path):
    # The example's 3 cold TUs (a bucket, the bindings, kernels.cpp) are too
    # few for the precompile to pay: under PCH=auto they compile without the
    # prelude, as under load()'s pch="auto"; a formula edit's TU takes it.
    root = clone(tmp_path / "repo")
    args = ARGS + (f"PRELUDE_DIR={tmp_path / 'prelude'}",)   # this test's own: no other build made it
    cold = scons(root, *args).stdout   # (and the digest's TU, which includes nothing: codegen/emit/cache_key.py)
    assert compiled(cold) == ["bindings_0.os", "bucket_0.os", "cache_key.os", "kernels.os"]
    assert with_prelude(cold) == [] and " -x c++-header " not in cold
    edit(os.path.join(root, "specs", "derivatives.yaml"), *FORMULA)
    first = scons(root, *args).stdout
    assert with_prelude(first) == ["edited_0.os"] and compiled(first) == ["cache_key.os", "edited_0.os"]
    assert first.count(" -x c++-header ") == 1       # the first edit pays the precompile
    # PCH=1: every TU; the edit TU's command line is the same, so it alone is kept.
    forced = scons(root, *args, "PCH=1").stdout
    assert with_prelude(forced) == compiled(forced) == ["bindings_0.os", "bucket_0.os", "kernels.os"]


@pytest.mark.parametrize("value, policy", [(True, Pch.ON), (False, Pch.OFF), ("auto", Pch.AUTO),
                                           ("1", Pch.ON), ("0", Pch.OFF), (1, Pch.ON), (0, Pch.OFF),
                                           (Pch.AUTO, Pch.AUTO)])
def test_the_values_every_entry_point_takes(value, policy):
    assert Pch.parse(value) is policy


@pytest.mark.parametrize("value", ["on", "yes", 2, None, "AUTO"])
def test_any_other_value_is_one_error(value):
    with pytest.raises(ValueError, match=re.escape(f"pch must be 'auto', True or False, not {value!r}")):
        FunctionsRequest.of("nf.yaml", "d.yaml", pch=value)


def test_auto_takes_the_prelude_for_edits_always_and_for_cold_tus_where_it_pays():
    auto = Pch.AUTO
    for family, least in (("gcc", PCH_MIN_TUS), ("clang", PCH_MIN_TUS_CLANG)):
        for kind in (TUKind.BUCKET, TUKind.BINDING, TUKind.UNIT, None):   # None: the caller's own sources
            assert not auto.takes_prelude(kind, least - 1, family)
            assert auto.takes_prelude(kind, least, family)
        assert auto.takes_prelude(TUKind.EDIT, 0, family)
    assert Pch.ON.takes_prelude(TUKind.BUCKET, 0, "clang") and not Pch.OFF.takes_prelude(TUKind.EDIT, 100, "gcc")


def test_the_request_survives_load_spec_json():
    request = FunctionsRequest.of("nf.yaml", "d.yaml", tags="t.yaml", namespace="a::b", unity="3",
                                  includes="h.h", pch="auto", kernels=False, python="0")
    assert FunctionsRequest.from_json(request.to_json()) == request
    assert request.unity == 3 and request.emit.includes == ("h.h",) and request.emit.python is False


def test_an_unknown_builder_option_is_one_line(tmp_path):
    root = clone(tmp_path / "repo")
    edit(os.path.join(root, "specs", "SConscript"), "    python=", "    pchh=True,\n    python=")
    proc = scons(root, *ARGS, check=False)
    assert proc.returncode == 2
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("scons: ***")]
    assert line.startswith("scons: *** AutogradFunctions('gen'): unknown option 'pchh' (the options: ")
    assert "Traceback" not in proc.stderr
