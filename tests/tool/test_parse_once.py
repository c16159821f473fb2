"""The model is built once per build (issue 51): a build of the example reads
each spec file once, and the check of the linked library for kernels that
no object defines (site_scons/autograd_scons/tool/kernel_check.py) uses the kernels the
generator's update declared, without parsing the specs again; emission reads
no file but its templates; a no-op build (the manifest's fast path) imports
neither the parser nor the model nor the emitters."""

import builtins
import json
import os

from support.scons_helpers import FAKE_CXX, TINY_ARGS, clone, scons
from support.spec_facts import REPO

# Counts each spec file's parses (yaml_io.load_entries, before any module
# imports it by name) and plants `nm`'s answer: bmul's CPU kernel undefined.
_COUNTING = """
import atexit, collections, json, os, sys
sys.path.insert(0, os.path.abspath("site_scons"))
from autograd_scons.codegen.parse import yaml_io
counts = collections.Counter()
_load = yaml_io.load_entries
def load_entries(path, text):
    counts[os.path.basename(path)] += 1
    return _load(path, text)
yaml_io.load_entries = load_entries
from autograd_scons.tool import kernel_check
kernel_check.undefined_symbols = lambda library: [
    "                 U myops::native::bmul(at::Tensor const&, at::Tensor const&)"]
atexit.register(lambda: open("parses.json", "w").write(json.dumps(counts)))
"""


def test_a_build_and_its_kernel_check_parse_each_spec_once(tmp_path):
    repo = clone(tmp_path / "repo")
    proc = scons(repo, "-j2", f"CXX={FAKE_CXX}", "CUDA=0", prelude=_COUNTING, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert "the CompositeExplicitAutograd kernel 'bmul' is declared here but no object defines it" in out, out[-2000:]
    with open(os.path.join(repo, "parses.json")) as f:
        assert json.load(f) == {"native_functions.yaml": 1, "derivatives.yaml": 1}
    assert not os.path.exists(os.path.join(repo, "build", "example", "myops_ext.so"))   # never left to load


# Writes the generator's modules the run imported, as it exits.
_MODULES = """
import atexit, json, sys
atexit.register(lambda: open("modules.json", "w").write(json.dumps(
    sorted(m for m in sys.modules if m.startswith("autograd_scons.codegen.")))))
"""

# What the fast path needs of them: the request's options, the manifest's
# declared kernels, and the digest the tool writes from the library's inputs.
_LIGHT = {"autograd_scons.codegen.model", "autograd_scons.codegen.emit", "autograd_scons.codegen.emit.options",
          "autograd_scons.codegen.emit.cache_key", "autograd_scons.codegen.model.declared_kernel",
          "autograd_scons.codegen.model.stable_target"}


def test_a_no_op_build_imports_neither_the_parser_nor_the_model_nor_the_emitters(tmp_path):
    """Every SCons run imports the tool: a no-op build's import is most of
    its time, and the model's frozen dataclasses were most of that
    (docs/benchmarks.md)."""
    repo = clone(tmp_path / "repo")
    scons(repo, *TINY_ARGS, "CUDA=0")
    proc = scons(repo, *TINY_ARGS, "CUDA=0", prelude=_MODULES)
    assert "inputs unchanged (specs not parsed)" in proc.stdout, proc.stdout[-2000:]
    with open(os.path.join(repo, "modules.json")) as f:
        imported = json.load(f)
    assert "autograd_scons.codegen.engine.incremental" in imported   # (the fast path ran here)
    heavy = [m for m in imported if m.split(".")[2] in ("parse", "model", "emit", "formula")
             and m not in _LIGHT]
    assert heavy == []


def test_emission_reads_no_file_but_its_templates(monkeypatch):
    """Every unit of the example rendered with `open` refusing any file
    outside codegen/templates/ (the templates are read on first use)."""
    from autograd_scons.codegen import templates
    from autograd_scons.codegen.emit.options import EmitOptions
    from autograd_scons.codegen.engine.units import load_units
    units = load_units(os.path.join(REPO, "specs", "native_functions.yaml"),
                       os.path.join(REPO, "specs", "derivatives.yaml"))
    real_open, opened = builtins.open, []

    def guarded(file, *args, **kwargs):
        if not os.path.abspath(str(file)).startswith(templates.FOLDER + os.sep):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)
    monkeypatch.setattr(builtins, "open", guarded)
    opts = EmitOptions(namespace="myops::autograd", includes=("myops/backward_helpers.h",))
    rendered = [u.render(opts) for u in units]
    assert len(rendered) > 20 and opened == []
