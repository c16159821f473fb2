"""load()'s JSON build report ($AUTOGRAD_REPORT, docs/ci.md): written by
the SCons build it runs (entry "load"), or, when its stamp vouches for the
library and no build runs, a report that says so (status up_to_date).  A
second build folder through the same CacheDir retrieves every object.
Stand-in compiler (tests/support/fakecxx.sh)."""

import os

import pytest

from support.load_helpers import environ, example, run

from autograd_scons.build_report import document


@pytest.mark.compile
def test_load_reports_its_build_and_a_load_that_ran_none(tmp_path):
    call = dict(example(tmp_path / "specs"), build_directory=str(tmp_path / "build"))
    path = tmp_path / "reports" / "load.json"   # (its folder made)
    env = environ(AUTOGRAD_EXTENSIONS_DIR=str(tmp_path / "ext"), AUTOGRAD_REPORT=str(path),
                  AUTOGRAD_CACHEDIR=str(tmp_path / "cache"))
    run(call, env)
    doc = document.read(str(path))
    assert (doc["entry"], doc["status"], doc["cachedir"]) == ("load", "ok", str(tmp_path / "cache"))
    [folder] = doc["folders"]
    assert folder["path"] == os.path.join(tmp_path, "build", "gen")
    assert sorted(os.path.basename(o["path"]) for o in doc["objects"] if o["fate"] == "compiled") == \
        ["bindings_0.os", "bucket_0.os", "cache_key.os", "kernels.os"]

    run(call, env)   # the stamp says up to date: no SCons
    doc = document.read(str(path))
    assert (doc["entry"], doc["status"], doc["objects"], doc["summary"]["hit_rate"]) == ("load", "up_to_date", [],
                                                                                        None)

    # a report that cannot be written: a warning, and the load goes on
    blocked = dict(env, AUTOGRAD_REPORT=str(tmp_path / "reports" / "load.json" / "x.json"))
    proc = run(call, blocked)
    assert proc.stderr.strip().startswith(f"autograd_scons: warning: cannot write the build report {tmp_path}")

    # another build folder (a second checkout's), the same CacheDir
    run(dict(call, build_directory=str(tmp_path / "build2")), env)
    doc = document.read(str(path))
    assert {o["fate"] for o in doc["objects"]} == {"retrieved"} and doc["summary"]["hit_rate"] == 1.0
