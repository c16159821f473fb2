"""The parsed native_functions.yaml kept between updates (codegen/engine/native_cache.py):
a formula edit does not parse native_functions.yaml again, and whatever the
cache holds, an update generates what a cold one does."""

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys

import pytest

from support import scenarios
from autograd_scons.codegen.engine import incremental, native_cache, native_records
from autograd_scons.codegen.emit.options import EmitOptions
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.codegen.engine.native_cache import NATIVE_CACHE
from support.scons_helpers import tree
from support.spec_facts import REPO

OPTS = EmitOptions(namespace="myops::autograd", includes=("myops/backward_helpers.h",))


class Example:
    """A copy of the example specs, an output folder, and a count of parses."""

    def __init__(self, root, monkeypatch):
        shutil.copytree(os.path.join(REPO, "specs"), root)
        self.nf, self.d = str(root / "native_functions.yaml"), str(root / "derivatives.yaml")
        self.out = str(root / "gen")
        self.parses = 0
        real = native_cache.parse_native_functions

        def counting(*a, **k):
            self.parses += 1
            return real(*a, **k)
        monkeypatch.setattr(native_cache, "parse_native_functions", counting)

    def update(self, out=None, **kw):
        return incremental.update(out or self.out, FunctionsRequest(self.nf, self.d, None, OPTS),
                                  **{"jobs": 2, "override": True, **kw})

    def cold(self, tmp_path):
        """The per-unit files (and shared headers) a cold update of the same
        specs generates; the unity TUs depend on the history (edit TUs)."""
        out = str(tmp_path / "cold")
        shutil.rmtree(out, ignore_errors=True)
        self.update(out)
        return units(out)


def units(out):
    return {rel: text for rel, text in tree(out).items() if not rel.startswith("unity/")}


@pytest.fixture
def ex(tmp_path, monkeypatch):
    e = Example(tmp_path / "example", monkeypatch)
    e.update()
    assert e.parses == 1 and os.path.isfile(os.path.join(e.out, NATIVE_CACHE))
    e.parses = 0
    return e


def test_a_formula_edit_does_not_parse_native_functions_again(ex, tmp_path):
    scenarios.edit(ex.d, "self: grad * alpha\n", "self: grad * alpha * 2\n")
    r = ex.update()
    assert r.parsed and r.regenerated == ["ScaleBackward0"] and ex.parses == 0
    assert units(ex.out) == ex.cold(tmp_path)


def test_a_native_functions_edit_parses_again(ex, tmp_path):
    # a new defaulted argument: the schema (and so the Function's header) changes
    scenarios.edit(ex.nf, "scale(Tensor self, Scalar alpha)", "scale(Tensor self, Scalar alpha, *, bool fast=False)")
    scenarios.edit(ex.d, "scale(Tensor self, Scalar alpha)", "scale(Tensor self, Scalar alpha, *, bool fast=False)")
    r = ex.update()
    assert ex.parses == 1 and "ScaleBackward0" in r.regenerated
    assert "fast" in open(os.path.join(ex.out, "functions", "ScaleBackward0.h")).read()
    assert units(ex.out) == ex.cold(tmp_path)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "directory"])
def test_a_damaged_cache_is_a_miss(ex, tmp_path, damage):
    path = os.path.join(ex.out, NATIVE_CACHE)
    data = open(path, "rb").read()
    os.unlink(path)
    if damage == "directory":
        os.mkdir(path)
    else:
        open(path, "wb").write({"truncated": data[: len(data) // 2], "garbage": b"\x80\x04 not a pickle",
                                "empty": b""}[damage])
    scenarios.edit(ex.d, "self: grad * alpha\n", "self: grad * alpha * 3\n")
    r = ex.update()
    assert r.regenerated == ["ScaleBackward0"] and ex.parses == 1
    assert units(ex.out) == ex.cold(tmp_path)


class _Planted:
    """Unpickling this runs `touch <marker>`: what a planted pickle could do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (subprocess.call, (["touch", self.marker],))


@pytest.mark.parametrize("payload", ["pickle", "json of another shape", "json of another class"])
def test_a_planted_cache_is_a_miss_and_never_runs(ex, tmp_path, payload):
    """A cache file with the right key line (copied from the real one) and a
    body that is not an encoded spec: a pickle that runs a command when
    unpickled, JSON of something else, JSON naming a class outside the
    parse's records."""
    path, marker = os.path.join(ex.out, NATIVE_CACHE), str(tmp_path / "ran")
    with open(path, "rb") as f:
        key_line = f.readline()
    body = {"pickle": pickle.dumps(_Planted(marker)),
            "json of another shape": json.dumps({"functions": []}).encode(),
            "json of another class": json.dumps([[["Popen", [["touch", marker]]]], {"o": 0}]).encode()}[payload]
    with open(path, "wb") as f:
        f.write(key_line + body)
    scenarios.edit(ex.d, "self: grad * alpha\n", "self: grad * alpha * 3\n")
    r = ex.update()
    assert not os.path.exists(marker)
    assert r.regenerated == ["ScaleBackward0"] and ex.parses == 1   # a miss: parsed again
    assert units(ex.out) == ex.cold(tmp_path)
    with open(path, "rb") as f:
        assert f.readline() == key_line and json.loads(f.read())   # rewritten as data


@pytest.mark.compile
def test_the_records_round_trip_torch_specs(torch_specs):
    """Every field of every record, the raw yaml entries, and which records
    are one object (a NativeFunction in `functions`, `ordered` and its view
    group) come back from the format."""
    nf = torch_specs[0]
    with open(nf) as f:
        spec = native_cache.parse_native_functions(nf, f.read(), None)
    back = native_records.decode(json.loads(json.dumps(native_records.encode(spec))))
    assert back == spec and [f.raw for f in back.functions] == [f.raw for f in spec.functions]
    ids = {id(f) for f in back.functions}
    assert all(id(f) in ids for f in back.ordered)
    assert all(id(f) in ids for g in back.view_groups for f in g.functions())


def test_bad_input_and_dry_runs_leave_no_cache(tmp_path, monkeypatch):
    e = Example(tmp_path / "example", monkeypatch)
    good = open(e.d).read()
    scenarios.edit(e.d, "self: grad * alpha\n", "self: [grad * alpha\n")  # a YAML error
    with pytest.raises(Exception):
        e.update()
    assert not os.path.exists(os.path.join(e.out, NATIVE_CACHE))
    open(e.d, "w").write(good)
    e.update(dry_run=True)
    assert not os.path.exists(os.path.join(e.out, NATIVE_CACHE))


class _Forks:
    """The writers update() forks (native_cache._Writer), by pid, so that a
    test can check that each was reaped: none is left blocked on its pipe.
    The fork is taken whatever threads this test process has (a test worker's,
    torch's pools): the child runs the same Python either way."""

    def __init__(self, monkeypatch):
        self.pids = []
        real = os.fork
        monkeypatch.setattr(native_cache, "_alone", lambda: True)

        def fork():
            pid = real()
            if pid:
                self.pids.append(pid)
            return pid
        monkeypatch.setattr(native_cache.os, "fork", fork)

    def all_reaped(self):
        for pid in self.pids:
            with pytest.raises(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        return bool(self.pids)


def test_an_update_failing_after_the_sources_leaves_no_cache(tmp_path, monkeypatch):
    """The sources written, the update fails before its manifest: the forked
    encoder of the fresh parse must exit without writing, and the next
    update parses again and generates what a cold one does."""
    e, forks = Example(tmp_path / "example", monkeypatch), _Forks(monkeypatch)

    def fail(*a, **k):
        raise OSError("injected: after the sources, before the manifest")
    monkeypatch.setattr(incremental, "write_manifest", fail)
    os.makedirs(e.out)  # (there before the update, as the folder's lock makes it)
    with pytest.raises(OSError, match="injected"):
        e.update()
    assert os.path.isfile(os.path.join(e.out, "functions", "ScaleBackward0.cpp"))  # (the sources are there)
    assert forks.all_reaped() and not os.path.exists(os.path.join(e.out, NATIVE_CACHE))
    assert not [n for n in os.listdir(e.out) if n.endswith(".tmp")]
    monkeypatch.undo()
    e = Example(tmp_path / "example2", monkeypatch)
    shutil.copytree(tmp_path / "example" / "gen", e.out)   # the failed run's folder, on the same specs
    e.update()
    assert e.parses == 1 and os.path.isfile(os.path.join(e.out, NATIVE_CACHE))
    assert units(e.out) == e.cold(tmp_path)


_KILLED = """\
import os, signal, sys
from autograd_scons.codegen.engine import incremental, native_cache
assert native_cache._alone()  # (a fresh process: the update forks its writer)
from autograd_scons.codegen.emit.options import EmitOptions
def killed(*a, **k):  # the sources written, the manifest not: killed there, as a build can be
    os.kill(os.getpid(), signal.SIGKILL)
incremental.write_manifest = killed
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
incremental.update(sys.argv[1], FunctionsRequest(sys.argv[2], sys.argv[3], None, EmitOptions(
    namespace="myops::autograd", includes=("myops/backward_helpers.h",))), jobs=2, override=True)
"""


def test_an_update_killed_after_the_sources_leaves_no_cache(tmp_path, monkeypatch):
    """SIGKILL after the sources, before the manifest: the encoder, left
    alone, sees its pipe closed and exits without writing.  (The child's
    stdout is the encoder's too: run() returns once both have exited.)"""
    e = Example(tmp_path / "example", monkeypatch)
    os.makedirs(e.out)  # (there before the update, as the folder's lock makes it)
    r = subprocess.run([sys.executable, "-c", _KILLED, e.out, e.nf, e.d], capture_output=True, timeout=120)
    assert r.returncode == -signal.SIGKILL, r.stderr.decode()
    assert os.path.isfile(os.path.join(e.out, "functions", "ScaleBackward0.cpp"))
    assert not os.path.exists(os.path.join(e.out, incremental.MANIFEST))
    assert not os.path.exists(os.path.join(e.out, NATIVE_CACHE))
    assert not [n for n in os.listdir(e.out) if n.endswith(".tmp")]
    r = e.update()
    assert r.parsed and e.parses == 1 and os.path.isfile(os.path.join(e.out, NATIVE_CACHE))
    assert units(e.out) == e.cold(tmp_path)


def test_the_forked_writer_is_reaped_and_the_fallback_writes_the_same(tmp_path, monkeypatch):
    """A successful update's writer is waited for (no zombie, its CPU is the
    update's); with other threads running the update encodes in process
    (no fork, which could catch a thread holding a lock), and both write the
    same cache."""
    e, forks = Example(tmp_path / "example", monkeypatch), _Forks(monkeypatch)
    forked, inline = str(tmp_path / "forked"), str(tmp_path / "inline")
    e.update(forked)
    assert forks.all_reaped()
    forks.pids.clear()
    monkeypatch.setattr(native_cache, "_alone", lambda: False)
    e.update(inline)
    assert not forks.pids
    caches = [open(os.path.join(out, NATIVE_CACHE), "rb").read() for out in (forked, inline)]
    assert caches[0] == caches[1] and json.loads(caches[0].split(b"\n", 1)[1])


def test_no_fork_beside_another_thread():
    """A fork can catch another thread holding a lock: with one running, the
    update encodes in process."""
    import threading
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not native_cache._alone()
    finally:
        stop.set()
        t.join()
