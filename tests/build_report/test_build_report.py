"""The JSON build report of `scons` (AUTOGRAD_REPORT=, tool/json_report.py,
report/), and the gate CI runs on it (`python -m autograd_scons report`).

Stand-in compiler (tests/support/fakecxx.sh) and, for a launcher's
statistics, a stand-in ccache (tests/support/fakeccache.sh): what these
check is what SCons built and how the report tells it, not what objects
hold.  The example at UNITY=2 PCH=0: 5 objects (two buckets, the Python
bindings, the digest of the generated code, the hand-written kernels.cpp).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from support import interruptions as ip
from support.scons_helpers import FAKE_CXX, REPO, clone, edit, report, scons

from autograd_scons.__main__ import main
from autograd_scons.codegen.engine.manifest import MANIFEST, read_manifest
from autograd_scons.codegen.engine.reasons import Reason
from autograd_scons.codegen.tree import TUKind
from autograd_scons.build_report import document
from autograd_scons.build_report.json_schema import REASONS, SCHEMA, TU_KINDS, problems

ARGS = ("UNITY=2", "PCH=0", f"CXX={FAKE_CXX}")
SCONS_MAIN = "import sys\nfrom SCons.Script.Main import main\nsys.exit(main())"
KINDS = {"bucket_0.os": "bucket", "bucket_1.os": "bucket", "bindings_0.os": "binding", "cache_key.os": "digest",
         "kernels.os": "user"}


def built(root, path, *args, check=True, **environ):
    """scons with the report asked for at `path`: (its report, the build)."""
    proc = scons(root, *ARGS, *args, f"AUTOGRAD_REPORT={path}", check=check, environ=environ or None)
    return document.read(str(path)), proc


def fates(doc):
    return {os.path.basename(o["path"]): o["fate"] for o in doc["objects"]}


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """A cold build of a clone through an empty CacheDir: (tmp, clone, cache, report, stdout)."""
    tmp = tmp_path_factory.mktemp("report")
    root = clone(tmp / "a")
    doc, proc = built(root, tmp / "cold.json", f"CACHEDIR={tmp / 'cache'}")
    return tmp, root, tmp / "cache", doc, proc.stdout


# --- the schema -----------------------------------------------------------------

def test_the_vocabularies_are_the_generators():
    """One vocabulary: the reasons the English report words (Reason.sentence)
    are the report's codes, and every kind of generated TU has its name."""
    assert REASONS == tuple(r.name.lower() for r in Reason) == tuple(r.code for r in Reason)
    assert set(TU_KINDS) == set(TUKind)
    assert SCHEMA["properties"]["version"] == {"const": document.VERSION}


def test_the_docs_give_every_reason_with_the_english_reports_words():
    with open(os.path.join(REPO, "docs", "ci.md"), encoding="utf-8") as f:
        table = f.read().split("| reason | the English report says |", 1)[1].split("\n\n", 1)[0]
        rows = dict(re.findall(r"^\| `(\w+)` \| (.+?) \|$", table, re.M))
    listed = {code: words for code, words in rows.items() if code in REASONS}
    assert list(listed) == list(REASONS)
    assert all(listed[r.code].startswith(r.sentence) for r in Reason), listed


def test_the_validator_finds_what_breaks_the_schema(cold):
    doc = cold[3]
    assert problems(doc) == []
    broken = json.loads(json.dumps(doc))
    del broken["summary"]["hit_rate"]
    broken["objects"][0]["fate"] = "cached"
    broken["folders"][0]["units"][0]["reason"] = "entry changed"
    broken["times"]["total_s"] = "1.0"
    assert sorted(problems(broken)) == sorted([
        "$.summary: no 'hit_rate'", "$.objects[0].fate: 'cached' is none of compiled, retrieved, launcher_hit, "
        "up_to_date, failed, not_built",
        "$.folders[0].units[0].reason: 'entry changed' is none of " + ", ".join(REASONS) + ", None",
        "$.times.total_s: str where number is due"])


def test_the_gate_refuses_what_is_not_a_report_in_one_line(tmp_path, capsys):
    (tmp_path / "x.json").write_text('{"format": "something else"}')
    (tmp_path / "half.json").write_text('{"format": "autograd-scons-build-report", "vers')
    for name, said in (("missing.json", "no such report"), ("x.json", "not an autograd-functions-scons build report"),
                       ("half.json", "not JSON")):
        assert main(["report", str(tmp_path / name), "--max-compiles", "0"]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and said in err, err


# --- what a build says ---------------------------------------------------------------

def test_a_cold_build_reports_its_units_tus_and_objects(cold):
    tmp, root, cache, doc, out = cold
    assert (doc["entry"], doc["status"], doc["error"], doc["cachedir"]) == ("scons", "ok", None, str(cache))
    [folder] = doc["folders"]
    assert folder["path"] == os.path.join(root, "build", "example", "gen")
    assert folder["specs"]["derivatives"] == os.path.join(root, "specs", "derivatives.yaml")
    assert {(u["state"], u["reason"]) for u in folder["units"]} == {("regenerated", "no_manifest")}
    assert [t["kind"] for t in folder["tus"]] == ["bucket", "bucket", "binding", "digest"]
    assert fates(doc) == dict.fromkeys(KINDS, "compiled")
    assert {os.path.basename(o["path"]): o["kind"] for o in doc["objects"]} == KINDS
    assert all(o["folder"] == (None if o["kind"] == "user" else 0) for o in doc["objects"])
    assert all(o["seconds"] is not None for o in doc["objects"])
    s = doc["summary"]
    n = len(read_manifest(os.path.join(folder["path"], MANIFEST))[0].units)   # the example's units
    assert (s["units"], s["regenerated"], s["objects"], s["compiled"], s["hit_rate"]) == (n, n, 5, 5, 0.0)
    ident = folder["identity"]
    assert ident["compiler"]["command"] == FAKE_CXX.split() and "-O2" in ident["flags"]
    assert ident["torch"]["version"].startswith("2.") and len(ident["digest"]) == 64
    assert doc["times"]["total_s"] > doc["times"]["generate_s"] > 0
    # the English report, unchanged for a build that retrieved nothing
    assert report(out)[-1] == "5 objects compiled in all (4 generated, 1 other)"


@pytest.mark.compile
def test_a_formula_edit_reports_the_reason_the_english_report_gives(cold, tmp_path):
    tmp, root = cold[0], shutil.copytree(cold[1], tmp_path / "a", symlinks=True)
    edit(os.path.join(root, "specs", "derivatives.yaml"), "self: grad * alpha", "self: grad * alpha * 2")
    doc, proc = built(root, tmp_path / "edit.json")
    units = {u["name"]: (u["state"], u["reason"]) for u in doc["folders"][0]["units"]}
    assert units.pop("ScaleBackward0") == ("regenerated", "entry")
    # re-rendered to the same text (their key holds the entry): not rewritten
    assert units.pop("myops::scale") == units.pop("myops::scale_") == ("identical", "entry")
    assert set(units.values()) == {("up_to_date", None)}
    assert f"{Reason.ENTRY.sentence}: 3 (ScaleBackward0, myops::scale, myops::scale_)" in report(proc.stdout)[0]
    # its edit TU and the digest compile; nothing else
    done = fates(doc)
    assert sorted(n for n, f in done.items() if f == "compiled") == ["cache_key.os", "edited_0.os"]
    assert {done[n] for n in KINDS if n != "cache_key.os"} == {"up_to_date"}
    assert doc["summary"]["compiled"] == 2 and doc["folders"][0]["layout"]["alone"] == ["ScaleBackward0"]


def test_a_second_checkout_retrieves_every_object_from_the_cachedir(cold, capsys):
    tmp, cache = cold[0], cold[2]
    doc, proc = built(clone(tmp / "b"), tmp / "second.json", f"CACHEDIR={cache}")
    assert fates(doc) == dict.fromkeys(KINDS, "retrieved")
    assert (doc["summary"]["retrieved"], doc["summary"]["compiled"], doc["summary"]["hit_rate"]) == (5, 0, 1.0)
    # the English report no longer counts them as compiled
    assert report(proc.stdout)[-1] == "0 objects compiled in all (0 generated, 0 other), 5 retrieved from the cache"
    assert main(["report", str(tmp / "second.json"), "--min-hit-rate", "1", "--max-compiles", "0"]) == 0
    assert capsys.readouterr().out.startswith(f"{tmp / 'second.json'}: ok: hit rate 1.00 (5 of 5 objects")


def test_the_gate_fails_a_planted_cache_miss_in_one_line(cold, tmp_path, capsys):
    cache = shutil.copytree(cold[2], tmp_path / "cache")
    with open(os.path.join(cold[1], "build", "example", "gen", "unity", "bucket_0.os"), "rb") as f:
        planted = f.read()
    entries = [os.path.join(d, n) for d, _, names in os.walk(cache) for n in names
               if open(os.path.join(d, n), "rb").read() == planted]
    assert len(entries) == 1
    os.remove(entries[0])   # the miss
    path = tmp_path / "r.json"
    doc, _ = built(clone(tmp_path / "c"), path, f"CACHEDIR={cache}")
    assert fates(doc)["bucket_0.os"] == "compiled" and doc["summary"]["hit_rate"] == 0.8
    assert main(["report", str(path), "--min-hit-rate", "0.9", "--max-compiles", "0"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (f"{path}: FAILED: hit rate 0.80 < 0.9 (compiled: bucket_0.os); "
                                 "1 compiled > 0 allowed\n")
    assert main(["report", str(path), "--min-hit-rate", "0.8"]) == 0   # as good as asked


def test_a_build_stopped_by_a_spec_error_reports_its_line_and_no_stale_report(cold, tmp_path):
    root = clone(tmp_path / "a")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(cold[3]))   # the last build's: must not survive this one
    edit(os.path.join(root, "specs", "derivatives.yaml"), "  self: grad * alpha", "  nosuch: grad * alpha")
    doc, proc = built(root, path, check=False)
    assert proc.returncode == 2 and doc["status"] == "failed"
    [line] = proc.stderr.strip().splitlines()
    assert line == f"scons: *** {doc['error']}" and "derivatives.yaml" in doc["error"]
    assert doc["objects"] == [] and doc["folders"] == []


@pytest.mark.compile
def test_a_killed_build_leaves_no_report_not_even_the_last_ones(cold, tmp_path):
    root = clone(tmp_path / "a")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(cold[3]))   # the last build's
    marker = ip.stall_at(root, "compile", str(tmp_path / "stalled"))
    env = dict({k: v for k, v in os.environ.items() if not k.startswith("AUTOGRAD_")}, AUTOGRAD_REPORT=str(path))
    proc = subprocess.Popen([sys.executable, "-c", SCONS_MAIN, *ARGS], cwd=root, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ip.wait_for(marker, proc)
        assert not path.exists()   # removed when the build started
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        ip.end_leftovers(root)
    assert not path.exists()
    assert main(["report", str(path), "--max-compiles", "0"]) == 2


@pytest.mark.compile
def test_a_failed_compile_reports_the_objects_failed_and_not_built(cold, tmp_path):
    root = shutil.copytree(cold[1], tmp_path / "a", symlinks=True)
    shutil.rmtree(os.path.join(root, "build", "example", "gen"))
    doc, proc = built(root, tmp_path / "r.json", "-j1", "CXX=false", check=False)
    assert proc.returncode == 2 and doc["status"] == "failed" and doc["error"].endswith("Error 1")
    assert sorted(fates(doc).values()) == ["failed"] + ["not_built"] * 4


@pytest.mark.compile
def test_a_launcher_cache_reports_its_hits_from_its_statistics(cold, tmp_path):
    """ccache's counters before and after: all misses, all hits (each object
    a launcher hit), then a mix, counted but placed on no object."""
    launcher = tmp_path / "bin" / "ccache"
    launcher.parent.mkdir()
    shutil.copy(os.path.join(REPO, "tests", "support", "fakeccache.sh"), launcher)
    launcher.chmod(0o755)
    env = {"CCACHE_DIR": str(tmp_path / "ccache")}
    a, _ = built(clone(tmp_path / "a"), tmp_path / "a.json", "-j1", f"LAUNCHER={launcher}", **env)
    assert a["launcher"]["statistics"] == "ccache" and (a["launcher"]["hits"], a["launcher"]["misses"]) == (0, 5)
    assert set(fates(a).values()) == {"compiled"} and a["summary"]["hit_rate"] == 0.0
    b, _ = built(clone(tmp_path / "b"), tmp_path / "b.json", "-j1", f"LAUNCHER={launcher}", **env)
    assert (b["launcher"]["hits"], b["launcher"]["misses"]) == (5, 0)
    assert set(fates(b).values()) == {"launcher_hit"} and b["summary"]["hit_rate"] == 1.0
    assert b["summary"]["compiled"] == 0 and b["launcher"]["after"]["hits"] == b["launcher"]["before"]["hits"] + 5
    # a third checkout whose kernels.cpp differs: 3 hits and 2 misses (the
    # kernel's object and the library's digest, which covers its source),
    # which the counters cannot tell apart: counted, and every object said compiled
    c_root = clone(tmp_path / "c")
    with open(os.path.join(c_root, "specs", "csrc", "kernels.cpp"), "a") as f:
        f.write("// edited\n")
    c, _ = built(c_root, tmp_path / "c.json", "-j1", f"LAUNCHER={launcher}", **env)
    assert (c["launcher"]["hits"], c["launcher"]["misses"]) == (3, 2)
    assert set(fates(c).values()) == {"compiled"}
    assert (c["summary"]["compiled"], c["summary"]["launcher_hit"], c["summary"]["hit_rate"]) == (2, 3, 0.6)


def test_a_launcher_given_as_a_string_is_recognised(monkeypatch, tmp_path):
    """An embedding SConstruct may set AUTOGRAD_LAUNCHER to a string (docs/scaling-out.md)."""
    from autograd_scons.tool import json_report
    run = json_report._Run(str(tmp_path / "r.json"))
    monkeypatch.setattr(json_report, "_RUN", [run])
    ran = []
    timed = json_report._Timed(lambda sh, escape, cmd, args, env: ran.append(args) or 0,
                                {"AUTOGRAD_LAUNCHER": f"{tmp_path / 'ccache'} --flag"})
    args = [str(tmp_path / "ccache"), "--flag", "g++", "-o", "x.os", "-c", "x.cpp"]
    assert timed("sh", lambda w: f'"{w}"', args[0], args, {}) == 0 and ran == [args]
    assert run.launcher == args[:2] and run.commands[0][0:2] == ("compile", "x.os") and run.commands[0][4]
